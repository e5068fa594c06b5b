"""The pytest-mh compatibility plugin: ``-p pytest_mh_ansible.compat.plugin`` (opt-in, see docs).

Loading it serves the ``pytest_mh`` import name from this layer, stands in for pytest-mh's
plugin object (so that ``pytest_plugin_registered`` can set ``config_class``), makes the session's
hosts and roles through the project's ``MultihostConfig``/``MultihostDomain`` classes, and adds
pytest-mh's ``mh_config`` and ``mh_logger`` fixtures and ``MultihostItemData``.
"""

from __future__ import annotations

import warnings
from collections.abc import Generator, Mapping
from typing import Any

import pytest

from .. import MultihostFixture, MultihostHost, MultihostRole, Registry
from .._private.stash import SESSION_KEY
from . import _alias
from ._mode_check import PLUGIN_NAME as MODE_CHECK_PLUGIN
from ._mode_check import ModeCheck
from .config import MultihostConfig, MultihostPlugin, confdict_from_inventory
from .host import MultihostHost as CompatHost
from .itemdata import MULTIHOST_KEY, MultihostItemData
from .logger import MultihostLogger, logger_for

__all__ = ["MULTIHOST_PLUGIN"]

if _alias.real_pytest_mh_installed():
    warnings.warn(
        "pytest-mh is installed too: while pytest_mh_ansible.compat.plugin is loaded, "
        "'import pytest_mh' gives pytest-mh-ansible's compatibility layer",
        stacklevel=1,
    )
_alias.install()

MULTIHOST_PLUGIN = MultihostPlugin()
"""The object a suite's ``pytest_plugin_registered`` recognises as pytest-mh's plugin."""


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    # Registered as early as possible: pytest_plugin_registered is replayed for every conftest after it.
    if pluginmanager.get_plugin("pytest_mh.plugin") is None:
        pluginmanager.register(MULTIHOST_PLUGIN, "pytest_mh.plugin")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_Bridge(config), "mh-ansible-compat-bridge")
    # the findings check of Coredumpd and Auditd (their modes); it follows the running test
    config.pluginmanager.register(ModeCheck(), MODE_CHECK_PLUGIN)


class _Bridge:
    """Makes the session's hosts and roles through the suite's ``MultihostConfig`` (``pytest_mh_register``)."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config

    def pytest_mh_register(self, registry: Registry) -> None:
        config_class = MULTIHOST_PLUGIN.config_class
        session = self._config.stash.get(SESSION_KEY, None)
        if config_class is None or session is None:
            return
        if not (isinstance(config_class, type) and issubclass(config_class, MultihostConfig)):
            raise pytest.UsageError(
                f"pytest-mh compatibility: MultihostPlugin.config_class must be a subclass of "
                f"pytest_mh.MultihostConfig, got {config_class!r}"
            )
        infos = [
            (info.name, info.roles, info.domain, session.inventory.host(info.name).variables)
            for info in session.host_infos
        ]
        multihost = config_class(
            confdict_from_inventory(infos), logger=logger_for("config"), artifacts_dir=str(self._config.rootpath)
        )
        self._config.stash[MULTIHOST_KEY] = multihost
        registry.mark_class = multihost.TopologyMarkClass

        def make_host(name: str, roles: tuple[str, ...], domain: str, variables: Mapping[str, Any]) -> MultihostHost:
            mh_domain = multihost.domain(domain)
            return mh_domain.create_host(mh_domain.host_confdict(name))

        def make_role(mh: MultihostFixture, role: str, host: MultihostHost) -> MultihostRole[Any]:
            if isinstance(host, CompatHost):
                made: MultihostRole[Any] = host.mh_domain.create_role(mh, host)
                return made
            return registry.role_class(role)(mh, role, host)

        registry.factories(host=make_host, role=make_role)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        report: pytest.TestReport = yield
        data = MultihostItemData.GetData(item)
        if data is not None:
            if report.when == "call":
                data.result = report
                data.outcome = report.outcome
            elif report.when == "setup" and report.outcome != "passed":
                data.outcome = "skipped" if report.skipped else "error"
        return report


@pytest.fixture
def mh_config(request: pytest.FixtureRequest) -> MultihostConfig | None:
    """pytest-mh's session configuration object (the suite's ``MultihostConfig``), or None without one."""
    return request.config.stash.get(MULTIHOST_KEY, None)


@pytest.fixture
def mh_logger() -> MultihostLogger:
    """pytest-mh's logger (records go to Python's logging, ``pytest_mh_ansible.compat``)."""
    return logger_for("test")
