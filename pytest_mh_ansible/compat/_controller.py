"""pytest-mh's ``TopologyController`` and ``BackupTopologyController`` on this project's topology life cycle.

The session binds each controller to the hosts of its topology before the topology's first test;
the first bind calls :meth:`TopologyController.init` (once, with pytest-mh's arguments), then
``set_artifacts`` and ``topology_setup``. Every hook gets the hosts it names by fixture name.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .. import MultihostBackupHost as _MultihostBackupHost
from .. import MultihostHost as _MultihostHost
from .. import TopologyController as _TopologyController
from .artifacts import MultihostArtifactsType, MultihostTopologyControllerArtifacts

if TYPE_CHECKING:
    from .. import Topology, TopologyMark
    from ..controller import HostArgs, HostSlots
    from .logger import MultihostLogger

__all__ = ["BackupTopologyController", "TopologyController"]

ConfigT = TypeVar("ConfigT")
F = TypeVar("F", bound=Callable[..., Any])

_NOT_READY = "TopologyController has not been initialized yet: its topology has not been set up"


class TopologyController(_TopologyController, Generic[ConfigT]):
    """pytest-mh's ``TopologyController[ConfigType]``: per-topology hooks, given the hosts they name.

    ``name``, ``topology``, ``multihost``, ``logger``, ``ns`` and ``hosts`` (a list, sorted by
    hostname) are set by :meth:`init`, which runs once, when the topology is first set up;
    override it (calling ``super().init(*args, **kwargs)``) for work the constructor cannot do.

    Example::

        class ClientController(TopologyController[MyConfig]):
            def init(self, *args, **kwargs):
                super().init(*args, **kwargs)
                self.provisioned = self.name in self.multihost.provisioned_topologies

            def set_artifacts(self, client):
                self.artifacts.topology_setup[client] = {"/var/log/enroll.log"}

            def skip(self, client):
                return None if client.features["kcm"] else "KCM is not built in"

            def topology_setup(self, client):
                client.conn.run("authselect select sssd --force")
    """

    def __init__(self) -> None:
        super().__init__()
        self.artifacts: MultihostTopologyControllerArtifacts = MultihostTopologyControllerArtifacts()
        self._mh_initialized = False
        self._mh_init_name: str | None = None
        self._mh_multihost: ConfigT | None = None
        self._mh_logger: MultihostLogger | None = None
        self._mh_topology: Topology | None = None

    def init(
        self,
        name: str,
        multihost: ConfigT,
        logger: MultihostLogger,
        topology: Topology,
        mapping: dict[str, str],
    ) -> None:
        """Set the controller's topology: called once, before its topology is first set up; later calls do nothing.

        :param name: The topology's name.
        :param multihost: The session's ``MultihostConfig``.
        :param logger: The logger of the controller.
        :param topology: The topology.
        :param mapping: Fixture name to host path (``{"client": "test.client[0]"}``).
        """
        if self._mh_initialized:
            return
        self._mh_init_name = name
        self._mh_multihost = multihost
        self._mh_logger = logger
        self._mh_topology = topology
        if not self._mh_slots:  # called by hand, outside a session: pytest-mh's choice of hosts
            self._mh_slots = _slots_from_config(multihost, topology)
            self._mh_hosts = _args_from_slots(self._mh_slots, mapping)
        self._mh_initialized = True

    def _mh_bind(self, mark: TopologyMark, hosts: HostArgs, *, slots: HostSlots | None = None) -> None:
        """Bind to the topology's hosts; the first time, :meth:`init`; each time, :meth:`set_artifacts`."""
        super()._mh_bind(mark, hosts, slots=slots)
        if not self._mh_initialized:
            multihost = _config_of(self._mh_slots.values())
            logger = getattr(multihost, "logger", None) or _logger()
            self.init(mark.name, multihost, logger, mark.topology, dict(mark.fixtures))
        self._invoke_with_args(self.set_artifacts)

    def _mh_label(self) -> str:
        """The topology's name for messages, also before :meth:`init`."""
        if self._mh_init_name is not None:
            return self._mh_init_name
        return self._mh_mark.name if self._mh_mark is not None else ""

    @property
    def name(self) -> str:
        """The topology's name.

        :raises RuntimeError: Before :meth:`init` (in the constructor).
        """
        if self._mh_init_name is None:
            raise RuntimeError(_NOT_READY)
        return self._mh_init_name

    @property
    def topology(self) -> Topology:
        """The topology.

        :raises RuntimeError: Before :meth:`init`.
        """
        if self._mh_topology is None:
            raise RuntimeError(_NOT_READY)
        return self._mh_topology

    @property
    def multihost(self) -> ConfigT:
        """The session's ``MultihostConfig`` (the suite's class, with ``confdict`` from the host file).

        :raises RuntimeError: Before :meth:`init`, or when the session has no ``MultihostConfig``
            (``MultihostPlugin.config_class`` was not set).
        """
        if self._mh_multihost is None:
            raise RuntimeError(f"{_NOT_READY}, or the session has no MultihostConfig")
        return self._mh_multihost

    @property
    def logger(self) -> MultihostLogger:
        """The controller's logger.

        :raises RuntimeError: Before :meth:`init`.
        """
        if self._mh_logger is None:
            raise RuntimeError(_NOT_READY)
        return self._mh_logger

    @property
    def ns(self) -> SimpleNamespace:
        """The topology's hosts as ``ns.<domain id>.<role>`` (a list per role).

        :raises RuntimeError: Before :meth:`init`.
        """
        if not self._mh_initialized:
            raise RuntimeError(_NOT_READY)
        root = SimpleNamespace()
        for (domain, role), hosts in self._mh_slots.items():
            if not hasattr(root, domain):
                setattr(root, domain, SimpleNamespace())
            setattr(getattr(root, domain), role, list(hosts))
        return root

    @property
    def hosts(self) -> list[_MultihostHost]:  # type: ignore[override]  # pytest-mh's list; ours is by fixture
        """Every host of the topology, sorted by hostname.

        :raises RuntimeError: Before :meth:`init`.
        """
        if not self._mh_initialized:
            raise RuntimeError(_NOT_READY)
        unique = {id(host): host for hosts in self._mh_slots.values() for host in hosts}
        return sorted(unique.values(), key=lambda host: str(host.hostname))

    def get_artifacts_list(self, host: _MultihostHost, artifacts_type: MultihostArtifactsType) -> set[str]:
        """The paths to fetch from ``host`` after phase ``artifacts_type``: :attr:`artifacts` (override to add)."""
        return self.artifacts.get(host, artifacts_type)  # type: ignore[arg-type]

    def set_artifacts(self, *args: Any, **kwargs: Any) -> None:
        """Fill :attr:`artifacts`; called once, before :meth:`topology_setup`, with the hosts it names."""

    def skip(self, *args: Any, **kwargs: Any) -> str | None:
        """A reason to skip the test about to run (called before each test), or None."""
        return None

    def topology_setup(self, *args: Any, **kwargs: Any) -> None:
        """Prepare the topology, once before its first test."""

    def topology_teardown(self, *args: Any, **kwargs: Any) -> None:
        """Undo :meth:`topology_setup`, once after its last test."""

    def setup(self, *args: Any, **kwargs: Any) -> None:
        """Run before each test of the topology."""

    def teardown(self, *args: Any, **kwargs: Any) -> None:
        """Run after each test of the topology."""

    def __mh_describe__(self) -> str:
        return f"topology controller {type(self).__name__} of {self._mh_label()!r}"


class BackupTopologyController(TopologyController[ConfigT], Generic[ConfigT]):
    """pytest-mh's ``BackupTopologyController``: each test starts from the state ``topology_setup`` made.

    After :meth:`topology_setup` every backup host of the topology is backed up (``host.backup()``,
    kept in :attr:`backup_data`); :meth:`teardown` restores it after each test;
    :meth:`topology_teardown` removes it and puts the hosts back as they were when the session
    started (:meth:`restore_vanilla`). Subclasses set up first, then call ``super().topology_setup(**kwargs)``.

    Example::

        class LDAPController(BackupTopologyController[MyConfig]):
            @BackupTopologyController.restore_vanilla_on_error
            def topology_setup(self, client, ldap):
                client.sssd.domain = ...
                super().topology_setup(client=client, ldap=ldap)
    """

    def __init__(self) -> None:
        super().__init__()
        self.backup_data: dict[_MultihostBackupHost, Any | None] = {}

    def restore(self, hosts: dict[_MultihostBackupHost, Any | None]) -> None:
        """Restore each backup host of ``hosts`` from its backup data; other hosts are left alone.

        :raises ExceptionGroup: One or more hosts failed to restore (each was tried).
        """
        errors: list[Exception] = []
        for host, data in hosts.items():
            if not isinstance(host, _MultihostBackupHost):
                continue
            try:
                host.restore(data)
            except Exception as err:
                errors.append(err)
        if errors:
            raise ExceptionGroup(f"topology {self._mh_label()!r}: some hosts failed to restore", errors)

    def restore_vanilla(self) -> None:
        """Put the topology's backup hosts back as they were when the session started (their own backup)."""
        self.restore({host: host.backup_data for host in self.hosts if isinstance(host, _MultihostBackupHost)})

    def topology_setup(self, *args: Any, **kwargs: Any) -> None:
        """Back up every backup host of the topology (call it last from an override)."""
        super().topology_setup(**kwargs)
        for host in self.hosts:
            if isinstance(host, _MultihostBackupHost):
                self.backup_data[host] = _backup(host, f"mh-topology-backup-{self._mh_label()}")

    def topology_teardown(self, *args: Any, **kwargs: Any) -> None:
        """Remove the topology's backups (failures there are ignored) and restore the hosts' session state."""
        try:
            for host, data in self.backup_data.items():
                if isinstance(host, _MultihostBackupHost):
                    host.remove_backup(data)
        except Exception:  # a backup left behind costs disk space only; the restore below matters
            pass
        self.restore_vanilla()

    def teardown(self, *args: Any, **kwargs: Any) -> None:
        """Restore the hosts to the state :meth:`topology_setup` backed up."""
        self.restore(self.backup_data)

    @staticmethod
    def restore_vanilla_on_error(method: F) -> F:
        """Decorator: when ``method`` raises, restore the hosts' session state, then re-raise.

        ``method`` gets the hosts it names, whatever its caller passes.

        Example::

            class MyController(BackupTopologyController):
                @BackupTopologyController.restore_vanilla_on_error
                def topology_setup(self, client):
                    client.conn.run("might-fail")
                    super().topology_setup(client=client)
        """

        @functools.wraps(method)
        def wrapper(self: BackupTopologyController[Any], *args: Any, **kwargs: Any) -> Any:
            try:
                return self._invoke_with_args(functools.partial(method, self))
            except Exception:
                self.restore_vanilla()
                raise

        return wrapper  # type: ignore[return-value]


def _backup(host: _MultihostBackupHost, name: str) -> Any:
    """``host.backup()``; a backup host of this project (``backup(name=None)``) gets a name apart from its own."""
    try:
        takes_name = bool(inspect.signature(host.backup).parameters)
    except (TypeError, ValueError):
        takes_name = False
    return host.backup(name) if takes_name else host.backup()


def _config_of(slots: Any) -> Any:
    """The ``MultihostConfig`` of the layer's hosts (``host.mh_domain.mh_config``), or None for other hosts."""
    for hosts in slots:
        for host in hosts:
            domain = getattr(host, "mh_domain", None)
            config = getattr(domain, "mh_config", None)
            if config is not None:
                return config
    return None


def _logger() -> MultihostLogger:
    from .logger import logger_for

    return logger_for("topology")


def _slots_from_config(multihost: Any, topology: Topology) -> dict[tuple[str, str], list[_MultihostHost]]:
    """pytest-mh's hosts of ``topology``: in each of its domains, the first hosts of each role, as many as it needs."""
    slots: dict[tuple[str, str], list[_MultihostHost]] = {}
    for domain in getattr(multihost, "domains", []):
        if domain.id not in topology:
            continue
        wanted = topology.get(domain.id)
        for role in domain.roles:
            if role in wanted.roles:
                slots[(domain.id, role)] = list(domain.hosts_by_role(role))[: wanted.roles[role]]
    return slots


def _args_from_slots(slots: Mapping[tuple[str, str], list[_MultihostHost]], mapping: Mapping[str, str]) -> HostArgs:
    paths: dict[str, Any] = {}
    for (domain, role), hosts in slots.items():
        paths[f"{domain}.{role}"] = list(hosts)
        for index, host in enumerate(hosts):
            paths[f"{domain}.{role}[{index}]"] = host
    return {name: paths[path] for name, path in mapping.items() if path in paths}
