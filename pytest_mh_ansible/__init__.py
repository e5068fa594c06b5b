"""pytest-mh-ansible: multi-host system tests on Ansible inventories, connections and modules.

The public API; everything else is private and may change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .backup import BackupTopologyController, MultihostBackupHost
from .conn import Connection, ProcessResult
from .controller import TopologyController
from .errors import (
    HostLeaseError,
    HostUnreachableError,
    InventoryError,
    LabError,
    ModuleError,
    MultihostError,
    PlaybookError,
    ProcessError,
    ProcessTimeoutError,
    RollbackError,
    TeardownExceptionGroup,
    TopologyMarkError,
    UnsafePathError,
)
from .host import MultihostHost
from .marks import KnownTopologyBase, KnownTopologyGroupBase, TopologyMark
from .modules import ChangeRecorder, HostModules, ModuleResult
from .multihost import MultihostFixture
from .playbook import PlaybookHostStats, PlaybookOptions, PlaybookResult, TaskResult
from .registry import Registry
from .role import MultihostRole
from .rollback import CallRecord, JournalEntry, RollbackJournal
from .topology import Topology, TopologyDomain
from .utility import MultihostUtility
from .utils import (
    ConfigFiles,
    Crashes,
    FileSystem,
    Firewall,
    Logs,
    Packages,
    Services,
    Sysctl,
    TrafficControl,
    Users,
)

if TYPE_CHECKING:
    from .lab import Lab, LabHost, LabHostSpec, LabSpec, LabUserSpec

# The lab is imported on first use: the plugin stays cheap to load for runs that do not need it.
_LAZY = {"Lab", "LabHost", "LabHostSpec", "LabSpec", "LabUserSpec"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import lab

        return getattr(lab, name)
    raise AttributeError(f"module 'pytest_mh_ansible' has no attribute {name!r}")


__all__ = [
    "BackupTopologyController",
    "CallRecord",
    "ChangeRecorder",
    "ConfigFiles",
    "Connection",
    "Crashes",
    "FileSystem",
    "Firewall",
    "HostLeaseError",
    "HostModules",
    "HostUnreachableError",
    "InventoryError",
    "JournalEntry",
    "KnownTopologyBase",
    "KnownTopologyGroupBase",
    "Lab",
    "LabError",
    "LabHost",
    "LabHostSpec",
    "LabSpec",
    "LabUserSpec",
    "Logs",
    "ModuleError",
    "ModuleResult",
    "MultihostBackupHost",
    "MultihostError",
    "MultihostFixture",
    "MultihostHost",
    "MultihostRole",
    "MultihostUtility",
    "Packages",
    "PlaybookError",
    "PlaybookHostStats",
    "PlaybookOptions",
    "PlaybookResult",
    "ProcessError",
    "ProcessResult",
    "ProcessTimeoutError",
    "Registry",
    "RollbackError",
    "RollbackJournal",
    "Services",
    "Sysctl",
    "TaskResult",
    "TeardownExceptionGroup",
    "Topology",
    "TopologyController",
    "TopologyDomain",
    "TopologyMark",
    "TopologyMarkError",
    "TrafficControl",
    "UnsafePathError",
    "Users",
]
