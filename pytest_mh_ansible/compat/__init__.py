"""pytest-mh's public API on pytest-mh-ansible: existing pytest-mh suites run unchanged on an Ansible inventory.

Where no real pytest-mh is installed, ``import pytest_mh`` (and ``pytest_mh.conn``, ``pytest_mh.cli``,
``pytest_mh.utils.fs``, ...) gives this package, and a suite that registers ``pytest_mh`` as a plugin
gets this layer's plugin with it. Where one is installed, it is used, unless the layer is asked for
with ``-p pytest_mh_ansible.compat.plugin``. See ``docs/migrating-from-pytest-mh.md`` for every
name and its status.

PYTEST_DONT_REWRITE: suites import ``pytest_mh`` before their ``pytest_plugins`` registers it, and
pytest would warn that it can no longer rewrite the asserts of this package (as pytest-mh, it says so).

Example (a pytest-mh suite's conftest.py, unchanged)::

    from pytest_mh import MultihostPlugin
    from framework.config import MyConfig

    pytest_plugins = ("pytest_mh",)

    def pytest_plugin_registered(plugin):
        if isinstance(plugin, MultihostPlugin):
            plugin.config_class = MyConfig
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeAlias

import pytest

from .. import (
    KnownTopologyBase,
    KnownTopologyGroupBase,
    TeardownExceptionGroup,
)
from ..plugin import mh, mh_topology, mh_topology_mark, mh_topology_name
from ._controller import BackupTopologyController, TopologyController
from ._marks import TopologyMark
from ._plugin import MultihostPlugin, pytest_addoption, pytest_configure
from ._topology import Topology, TopologyDomain
from .artifacts import (
    MultihostArtifactsMode,
    MultihostArtifactsType,
    MultihostHostArtifacts,
    MultihostTopologyControllerArtifacts,
)
from .config import MultihostConfig, MultihostDomain
from .fixtures import MultihostFixture, mh_config, mh_logger
from .host import MultihostBackupHost, MultihostHost, MultihostOSFamily
from .itemdata import MultihostItemData
from .logger import MultihostLogger
from .role import MultihostRole
from .utility import (
    MultihostReentrantUtility,
    MultihostUtility,
    mh_utility,
    mh_utility_ignore_use,
    mh_utility_postpone_setup,
    mh_utility_used,
)

MultihostOutcome: TypeAlias = Literal["passed", "failed", "skipped", "error", "unknown"]


def mh_fixture(fixture_function: Callable[..., Any] | None = None, *, scope: str = "function") -> Any:
    """pytest-mh's ``@mh_fixture``: a fixture that receives role objects by their topology fixture names.

    Here role fixtures are real pytest fixtures, so this is ``pytest.fixture`` (function scope,
    as in pytest-mh). Usable as ``@mh_fixture``, ``@mh_fixture()`` or ``@mh_fixture(scope="function")``.

    Example::

        @mh_fixture
        def motd(client: Client):
            return client.fs.read("/etc/motd")
    """
    if scope != "function":
        raise ValueError(f"mh_fixture supports only scope='function' (as pytest-mh), got {scope!r}")
    if fixture_function is None:
        return pytest.fixture
    return pytest.fixture(fixture_function)


# A suite registers pytest-mh with pytest_plugins = ("pytest_mh",) or -p pytest_mh; where that name is
# this package, pytest then registers the layer's plugin too (pytest reads this from every plugin module).
pytest_plugins = ("pytest_mh_ansible.compat.plugin",)

__all__ = [
    "BackupTopologyController",
    "KnownTopologyBase",
    "KnownTopologyGroupBase",
    "MultihostArtifactsMode",
    "MultihostArtifactsType",
    "MultihostBackupHost",
    "MultihostConfig",
    "MultihostDomain",
    "MultihostFixture",
    "MultihostHost",
    "MultihostHostArtifacts",
    "MultihostItemData",
    "MultihostLogger",
    "MultihostOSFamily",
    "MultihostOutcome",
    "MultihostPlugin",
    "MultihostReentrantUtility",
    "MultihostRole",
    "MultihostTopologyControllerArtifacts",
    "MultihostUtility",
    "TeardownExceptionGroup",
    "Topology",
    "TopologyController",
    "TopologyDomain",
    "TopologyMark",
    "mh",
    "mh_config",
    "mh_fixture",
    "mh_logger",
    "mh_topology",
    "mh_topology_mark",
    "mh_topology_name",
    "mh_utility",
    "mh_utility_ignore_use",
    "mh_utility_postpone_setup",
    "mh_utility_used",
    "pytest_addoption",
    "pytest_configure",
]
