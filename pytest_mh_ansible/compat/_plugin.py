"""pytest-mh's plugin object, ``MultihostPlugin``: the suite's ``config_class`` and the layer's per-test hooks.

pytest-mh's plugin runs the whole session; here the project's plugin does (hosts, topologies,
artifacts, logs), and this object keeps to what only the layer knows: it makes the suite's
``MultihostConfig`` and hands its host, role and ``mh`` classes to the project
(``pytest_mh_register``), records each test's outcome in :class:`MultihostItemData`, lets
utilities change a test's reported status (``pytest_report_teststatus``) and writes the
logger's split files. Its other pytest-mh hooks exist and do nothing, so none runs twice.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

import pytest

from .._private.options import choice_option
from .._private.reporting.artifacts import artifacts_root
from .._private.stash import FIXTURE_KEY, SESSION_KEY
from ._topology import Topology
from .artifacts import MultihostArtifactsMode
from .itemdata import MULTIHOST_KEY, MultihostItemData
from .logger import MultihostLogger

if TYPE_CHECKING:
    from pathlib import Path

    from .. import MultihostFixture as ProjectFixture
    from .. import MultihostHost as ProjectHost
    from .. import MultihostRole as ProjectRole
    from .. import Registry
    from .config import MultihostConfig

__all__ = ["PLUGIN_NAME", "MultihostPlugin", "pytest_addoption", "pytest_configure", "register"]

PLUGIN_NAME = "MultihostPlugin"
"""The name pytest-mh registers its plugin object under (``config.pluginmanager.get_plugin(PLUGIN_NAME)``)."""

_MODES = ("never", "on-failure", "always")
_STATUS = "_pytest_mh__teststatus"


def _option(config: pytest.Config, name: str, default: Any) -> Any:
    """``config.getoption(name)``, or ``default`` when no plugin declares the option."""
    value = config.getoption(name, default)
    return default if value is None else value


class MultihostPlugin:
    """pytest-mh's plugin object; suites set :attr:`config_class` when it is registered.

    Example::

        def pytest_plugin_registered(plugin):
            if isinstance(plugin, MultihostPlugin):
                plugin.config_class = MyConfig

    Its ``mh_*`` attributes hold the run's options, as pytest-mh's do.
    """

    def __init__(self, pytest_config: pytest.Config) -> None:
        self.config_class: type[MultihostConfig] | None = None
        self.logger: logging.Logger = self.GetLogger()
        self.multihost: MultihostConfig | None = None
        self.topology: Topology | None = None
        self.confdict: dict[str, Any] | None = None
        self.current_mh: ProjectFixture | None = None
        self.current_topology: str | None = None
        self.required_hosts: list[ProjectHost] = []
        self.pytest_session: pytest.Session | None = None
        self._pytest_config = pytest_config
        self.mh_config: str | None = _option(pytest_config, "mh_config", None)
        self.mh_log_path: str | None = _option(pytest_config, "mh_log_path", None)
        self.mh_lazy_ssh: bool = bool(_option(pytest_config, "mh_lazy_ssh", False))
        self.mh_topology: list[str] = list(_option(pytest_config, "mh_topology", []))
        self.mh_not_topology: list[str] = list(_option(pytest_config, "mh_not_topology", []))
        self.mh_exact_topology: bool = bool(_option(pytest_config, "mh_exact_topology", False))
        self.mh_collect_artifacts: MultihostArtifactsMode = choice_option(  # type: ignore[assignment]
            pytest_config, "mh_collect_artifacts", "on-failure", _MODES
        )
        self.mh_artifacts_dir: Path = artifacts_root(pytest_config)
        self.mh_compress_artifacts: bool = bool(_option(pytest_config, "mh_compress_artifacts", False))
        self.mh_ignore_preferred_topology: bool = bool(_option(pytest_config, "mh_ignore_preferred_topology", False))
        self.mh_collect_logs: MultihostArtifactsMode = _option(pytest_config, "mh_collect_logs", None) or (
            self.mh_collect_artifacts
        )
        self.pytest_opt_collect_only: bool = bool(_option(pytest_config, "collectonly", False))

    @classmethod
    def GetLogger(cls) -> logging.Logger:
        """The plugin's own logger (``pytest_mh_ansible.compat.plugin``)."""
        return logging.getLogger("pytest_mh_ansible.compat.plugin")

    def setup(self) -> None:
        """Make the session's :class:`MultihostConfig` of :attr:`config_class` from the inventory (once).

        :raises ValueError: :attr:`config_class` is not set.
        :raises pytest.UsageError: It is not a subclass of ``MultihostConfig``, or there is no inventory.
        """
        from .config import MultihostConfig, confdict_from_inventory

        if self.multihost is not None:
            return
        config_class = self.config_class
        if config_class is None:
            raise ValueError("set MultihostPlugin.config_class to a subclass of MultihostConfig")
        if not (isinstance(config_class, type) and issubclass(config_class, MultihostConfig)):
            raise pytest.UsageError(
                f"pytest-mh compatibility: MultihostPlugin.config_class must be a subclass of "
                f"pytest_mh.MultihostConfig, got {config_class!r}"
            )
        session = self._pytest_config.stash.get(SESSION_KEY, None)
        if session is None:
            raise pytest.UsageError("pytest-mh compatibility: no Ansible inventory given (-i/--mh-inventory)")
        infos = [
            (info.name, info.roles, info.domain, session.inventory.host(info.name).variables)
            for info in session.host_infos
        ]
        self.confdict = confdict_from_inventory(infos)
        logger = MultihostLogger.GetLogger()
        logger.setup(
            log_path=None,
            artifacts_mode=self.mh_collect_logs,
            artifacts_dir=self.mh_artifacts_dir,
            confdict=self.confdict,
        )
        self.multihost = config_class(
            self.confdict,
            logger=logger,
            lazy_ssh=self.mh_lazy_ssh,
            artifacts_dir=self.mh_artifacts_dir,
            artifacts_mode=self.mh_collect_artifacts,
            artifacts_compression=self.mh_compress_artifacts,
        )
        self._pytest_config.stash[MULTIHOST_KEY] = self.multihost
        self.topology = Topology.FromMultihostConfig(self.confdict)

    def sigint_handler(self, sig: int, frame: Any) -> None:
        """pytest-mh's Ctrl-C handler; the project's interrupt handling is installed instead, this acts as Ctrl-C."""
        raise KeyboardInterrupt()

    # -- the project's hook: the suite's classes ---------------------------------------------------
    def pytest_mh_register(self, registry: Registry) -> None:
        """Hand the suite's host, role and mark classes (through its ``MultihostConfig``) and ``mh`` class over."""
        from .fixtures import MultihostFixture
        from .host import MultihostHost as CompatHost

        registry.fixture_class = MultihostFixture
        if self.config_class is None or self._pytest_config.stash.get(SESSION_KEY, None) is None:
            return
        self.setup()
        multihost = self.multihost
        if multihost is None:  # pragma: no cover - setup() made it or raised
            return
        registry.mark_class = multihost.TopologyMarkClass

        def make_host(name: str, roles: tuple[str, ...], domain: str, variables: Mapping[str, Any]) -> ProjectHost:
            for host in multihost.domain(domain).hosts:
                if host.hostname == name:
                    return host
            return multihost.domain(domain).create_host(multihost.domain(domain).host_confdict(name))

        def make_role(mh: ProjectFixture, role: str, host: ProjectHost) -> ProjectRole[Any]:
            if not isinstance(host, CompatHost):
                return registry.role_class(role)(mh, role, host)
            if host.role == role:
                made: ProjectRole[Any] = host.mh_domain.create_role(mh, host)
                return made
            # A host in several inventory groups without mh_role: the topology took it in another of them.
            classes = host.mh_domain.role_to_role_class
            cls = classes.get(role, classes.get("*"))
            if cls is None:
                raise ValueError(f"{type(host.mh_domain).__name__}.role_to_role_class: no class for role {role!r}")
            other: ProjectRole[Any] = cls(mh, role, host)
            return other

        registry.factories(host=make_host, role=make_role)

    # -- pytest-mh's hooks --------------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.pytest_session = session

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
        """Nothing to tear down here: the project's plugin tears the hosts down."""
        self.current_mh = None

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, Any, Any]:
        """The project parametrizes topology tests itself (same node ids with ``[topology]``); nothing to clone."""
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> Generator[None, Any, Any]:
        """After the project selected the items: the hosts they need, when the config is made already."""
        result = yield
        multihost = self.multihost
        if multihost is not None:
            needed: dict[int, ProjectHost] = {}
            for item in items:
                data = MultihostItemData.GetData(item)
                if data is not None and data.topology_mark is not None:
                    for host in multihost.topology_hosts(data.topology_mark.topology):
                        needed.setdefault(id(host), host)
            self.required_hosts = sorted(needed.values(), key=lambda host: str(getattr(host, "hostname", host.name)))
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_finish(self, session: pytest.Session) -> Generator[None, Any, Any]:
        """The project sets hosts up when a test first needs them; nothing to do here."""
        return (yield)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        data = MultihostItemData.GetData(item)
        if data is not None and data.topology_mark is not None:
            self.current_topology = data.topology_mark.name

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        self.current_mh = item.stash.get(FIXTURE_KEY, None)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
        """After the test's teardown: write (or drop) the logger's split files as the outcome asks."""
        try:
            return (yield)
        finally:
            self.current_mh = None
            data = MultihostItemData.GetData(item)
            if self.multihost is not None and data is not None and data.topology_mark is not None:
                self.multihost.logger.flush(data.outcome)

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(
        self, report: pytest.CollectReport | pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, str | tuple[str, Mapping[str, bool]]] | None:
        """Let the test's utilities change its reported status (their ``pytest_report_teststatus``), as pytest-mh."""
        if not isinstance(report, pytest.TestReport) or report.when != "call":
            return None
        if hasattr(report, _STATUS):
            cached: tuple[str, str, str | tuple[str, Mapping[str, bool]]] | None = getattr(report, _STATUS)
            return cached
        mh = self.current_mh
        if mh is None:
            return None
        before = report.outcome
        status = _utilities_status(mh, report, config)
        setattr(report, _STATUS, status)
        if status is not None:
            data = MultihostItemData.GetData(mh.request.node) if mh.request is not None else None
            if data is not None:
                data.outcome = report.outcome
            if before != report.outcome and report.failed and self.pytest_session is not None:
                self.pytest_session.testsfailed += 1
        return status

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        """Record the outcome in the item's :class:`MultihostItemData` (``outcome``, ``result``)."""
        report: pytest.TestReport = yield
        data = MultihostItemData.GetData(item)
        if data is not None:
            if report.when == "call":
                data.result = report
                data.outcome = report.outcome
            elif report.when == "setup" and report.outcome != "passed":
                data.outcome = "skipped" if report.skipped else "error"
        return report

    @pytest.hookimpl(optionalhook=True)
    def pytest_output_item_collected(self, config: pytest.Config, item: Any) -> None:
        """pytest-output's hook: add the test's topology to its output data."""
        inner = getattr(item, "item", None)
        extra = getattr(item, "extra", None)
        if not isinstance(inner, pytest.Item) or not isinstance(extra, dict):
            return
        data = MultihostItemData.GetData(inner)
        if data is not None and data.topology_mark is not None:
            extra.setdefault("pytest-mh", {})["Topology"] = data.topology_mark.name


def _utilities_status(
    mh: ProjectFixture, report: pytest.TestReport, config: pytest.Config
) -> tuple[str, str, str | tuple[str, Mapping[str, bool]]] | None:
    """The first status a utility of the test's roles, then hosts, returns from ``pytest_report_teststatus``."""
    from .utility import MultihostUtility

    for owner in [*mh.roles, *dict.fromkeys(mh.hosts)]:
        for value in list(vars(owner).values()):
            if isinstance(value, MultihostUtility):
                status = value.pytest_report_teststatus(report, config)
                if status is not None:
                    return status
    return None


def register(config: pytest.Config) -> None:
    """Register the :class:`MultihostPlugin` object once (whichever of the layer's hooks asks first)."""
    if config.pluginmanager.get_plugin(PLUGIN_NAME) is None:
        config.pluginmanager.register(MultihostPlugin(config), PLUGIN_NAME)


def pytest_addoption(parser: pytest.Parser) -> None:
    """pytest-mh's module hook, kept as a name: the options (``--mh-*``) are the project plugin's."""


def pytest_configure(config: pytest.Config) -> None:
    """pytest-mh's module hook: registers the :class:`MultihostPlugin` object (once)."""
    register(config)
