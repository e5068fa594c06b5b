"""pytest-mh-ansible: multi-host system tests on Ansible inventories, connections and modules.

The public API; everything else is private and may change.
"""

from __future__ import annotations

from .controller import TopologyController
from .errors import (
    HostUnreachableError,
    InventoryError,
    LabError,
    MultihostError,
    ProcessError,
    ProcessTimeoutError,
    TeardownExceptionGroup,
    TopologyMarkError,
)
from .host import MultihostHost
from .marks import KnownTopologyBase, KnownTopologyGroupBase, TopologyMark
from .multihost import MultihostFixture
from .playbook import PlaybookHostStats, PlaybookResult, TaskResult
from .registry import Registry
from .role import MultihostRole
from .topology import Topology, TopologyDomain
from .utility import MultihostUtility

__all__ = [
    "HostUnreachableError",
    "InventoryError",
    "KnownTopologyBase",
    "KnownTopologyGroupBase",
    "LabError",
    "MultihostError",
    "MultihostFixture",
    "MultihostHost",
    "MultihostRole",
    "MultihostUtility",
    "PlaybookHostStats",
    "PlaybookResult",
    "ProcessError",
    "ProcessTimeoutError",
    "Registry",
    "TaskResult",
    "TeardownExceptionGroup",
    "Topology",
    "TopologyController",
    "TopologyDomain",
    "TopologyMark",
    "TopologyMarkError",
]
