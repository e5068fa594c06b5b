"""pytest-mh's hosts: ``MultihostHost(domain, confdict)`` and ``MultihostBackupHost`` on inventory hosts."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from enum import Enum
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .. import MultihostBackupHost as _MultihostBackupHost
from .. import MultihostHost as _MultihostHost
from .artifacts import MultihostArtifactsCollector, MultihostArtifactsType, MultihostHostArtifacts
from .cli import CLIBuilder
from .conn import DEFAULT_TIMEOUT, Bash, Connection, HostConnection, Powershell, Shell
from .logger import MultihostHostLogger, MultihostLogger, logger_for

if TYPE_CHECKING:
    from .config import MultihostDomain

__all__ = ["MultihostBackupHost", "MultihostHost", "MultihostOSFamily", "validate_fields"]

DomainT = TypeVar("DomainT", bound="MultihostDomain[Any]")


class MultihostOSFamily(Enum):
    """The host's operating system family (``mh_os_family``; pytest-mh's ``os.family``)."""

    Linux = "linux"
    Windows = "windows"


def validate_fields(required: list[str], confdict: Mapping[str, Any], what: str) -> None:
    """Raise pytest-mh's ``ValueError`` when a required field (``a/b`` for nested ones) is missing from ``confdict``.

    :raises ValueError: Names the first missing field: ``"hostname" property is missing in host configuration``.
    """
    for field in required:
        value: Any = confdict
        for part in field.replace(".", "/").split("/"):
            if not isinstance(value, Mapping) or part not in value:
                raise ValueError(f'"{field}" property is missing in {what}')
            value = value[part]


def ordered_utilities(owner: object, kind: type) -> list[Any]:
    """The ``kind`` utilities among ``owner``'s attributes, each after the utilities it was made with."""
    found = [value for value in vars(owner).values() if isinstance(value, kind)]
    done: list[Any] = []
    while len(done) < len(found):
        ready = [
            util
            for util in found
            if util not in done
            and all(dep in done or dep not in found for dep in getattr(util, "_mh_utility_dependencies", ()))
        ]
        done.extend(ready or [util for util in found if util not in done])  # a cycle: keep attribute order
    return done


_PROJECT_PHASES = {"session_setup": "pytest_setup", "session_teardown": "pytest_teardown"}


def _split_artifacts(value: Any) -> tuple[Any, dict[str, list[str]]]:
    """A host's ``artifacts`` for :class:`MultihostHostArtifacts`, and its topology phases kept apart.

    An inventory written for this project names the session phases ``session_setup``/``session_teardown``
    and may list ``topology_setup``/``topology_teardown`` paths on the host: they are read with
    pytest-mh's names rather than refused.
    """
    if not isinstance(value, Mapping):
        return value, {}
    host_phases: dict[str, Any] = {}
    topology: dict[str, list[str]] = {}
    for key, paths in value.items():
        name = _PROJECT_PHASES.get(str(key), str(key))
        if name in ("topology_setup", "topology_teardown"):
            topology[name] = [str(path) for path in paths or ()]
        else:
            host_phases[name] = paths
    return host_phases, topology


def _setting(config: object, name: str, kinds: tuple[type, ...], default: Any) -> Any:
    """``config.<name>`` when it is one of ``kinds`` (a config may be a stand-in in unit tests), else ``default``."""
    value = getattr(config, name, None)
    return value if isinstance(value, kinds) else default


class MultihostHost(_MultihostHost, Generic[DomainT]):
    """pytest-mh's host: made by its domain from a ``confdict``, with ``conn``, ``cli``, ``logger``, ``artifacts``.

    The inventory host of the same name gives the connection and the variables; the
    ``confdict`` is what pytest-mh would have read from ``mhc.yaml``: ``hostname``, ``role``,
    ``config`` (the ``mh_config`` variable), ``artifacts`` (``mh_artifacts``) and ``os``.
    ``conn.host`` is the address the connection goes to (the inventory's ``ansible_host``), as
    pytest-mh's ``ssh.host``: frameworks open their own clients (LDAP, Kerberos) to it.

    Example::

        class ClientHost(MultihostHost[MyDomain]):
            def pytest_setup(self):
                self.features = {"bash": self.conn.run("command -v bash", raise_on_error=False).rc == 0}
                self.artifacts.test.add("/var/log/client/*.log")

    :raises ValueError: A field of :attr:`required_fields` is missing, or ``os.family`` is unknown.
    """

    def __init__(self, domain: DomainT, confdict: dict[str, Any]) -> None:
        validate_fields(self.required_fields, confdict, "host configuration")
        name = str(confdict["hostname"])
        inventory: Mapping[str, Any] = getattr(domain, "_mh_inventory", None) or {}
        roles, variables = inventory.get(name, ((str(confdict["role"]),), {}))
        super().__init__(name, roles=roles, domain=str(getattr(domain, "id", "") or ""), variables=variables)
        self.mh_domain: DomainT = domain
        self.confdict = confdict
        self.role: str = str(confdict["role"])
        self.hostname = name
        parent = domain.logger
        self.logger: MultihostLogger = (
            parent.subclass(cls=MultihostHostLogger, suffix=f"host.{name}", hostname=name)
            if hasattr(parent, "subclass")
            else logger_for("host", name)
        )
        self.config = confdict.get("config") or {}
        configured, self._mh_topology_artifacts = _split_artifacts(confdict.get("artifacts") or [])
        self.configured_artifacts: MultihostHostArtifacts = MultihostHostArtifacts(configured)
        family = str((confdict.get("os") or {}).get("family", MultihostOSFamily.Linux.value)).lower()
        try:
            os_family = MultihostOSFamily(family)
        except ValueError:
            raise ValueError(f"host {name!r}: os family {family!r} is not supported (linux or windows)") from None
        self.os_family = os_family  # type: ignore[assignment]  # pytest-mh's enum where ours has a str
        self.shell: Shell = Powershell() if os_family is MultihostOSFamily.Windows else Bash()
        self.cli = CLIBuilder(self.shell)
        self.artifacts: MultihostHostArtifacts = MultihostHostArtifacts()
        settings = getattr(domain, "mh_config", None)
        self.artifacts_collector = MultihostArtifactsCollector(
            host=self,
            path=_setting(settings, "artifacts_dir", (str, PurePath), "artifacts"),
            mode=_setting(settings, "artifacts_mode", (str,), "on-failure"),
            compress=bool(getattr(settings, "artifacts_compression", False)),
        )
        timeout = variables.get("mh_command_timeout")
        self._mh_timeout = float(timeout) if timeout else DEFAULT_TIMEOUT
        self._mh_compat_conn: Connection[Any, Any] | None = None

    @property
    def required_fields(self) -> list[str]:
        """Fields the host's ``confdict`` must have (``a/b`` for nested ones); extend it in a subclass."""
        return ["role", "hostname"]

    @property
    def conn(self) -> Connection[Any, Any]:  # type: ignore[override]  # pytest-mh's connection API over ours
        """pytest-mh's connection (:meth:`get_connection`), made on first use: ``run``, ``exec``, ``expect``, ..."""
        if self._mh_compat_conn is None:
            self._mh_compat_conn = self.get_connection()
        return self._mh_compat_conn

    @property
    def _mh_utility_dependencies(self) -> list[Any]:
        """The host's reentrant utilities (its attributes), each after those it was made with (pytest-mh's order)."""
        from .utility import MultihostReentrantUtility

        return ordered_utilities(self, MultihostReentrantUtility)

    def get_connection(self) -> Connection[Any, Any]:
        """A new pytest-mh connection to the host: over its Ansible connection (``conn.host`` is its address).

        A ``conn`` section in the host's ``confdict`` (pytest-mh's ``type: ssh|podman|docker`` and its
        keys) gives pytest-mh's own client instead; the inventory-made ``confdict`` has none.
        """
        section = self.confdict.get("conn")
        if isinstance(section, Mapping):
            kind = str(section.get("type", "ssh"))
            if kind == "ssh":
                from .conn.ssh import SSHClient

                return SSHClient.from_confdict(self, dict(section))
            if kind in ("podman", "docker"):
                from .conn.container import ContainerClient

                return ContainerClient.from_confdict(self, dict(section))
            raise ValueError(f"host {self.hostname!r}: unknown connection type {kind!r} (ssh, podman or docker)")
        return HostConnection(
            super().conn,
            self.shell,
            host=self.address,
            timeout=self._mh_timeout,
            logger=self.logger,
            port=int(self.vars.get("ansible_port") or self.vars.get("ansible_ssh_port") or 22),
            user=str(self.vars.get("ansible_user") or self.vars.get("ansible_ssh_user") or "root"),
        )

    def get_artifacts_list(self, host: MultihostHost[Any], artifacts_type: MultihostArtifactsType) -> set[str]:
        """The files to fetch after ``artifacts_type``: the configured ones and those added to :attr:`artifacts`."""
        listed = self.configured_artifacts.get(artifacts_type) | self.artifacts.get(artifacts_type)
        return listed | set(self._mh_topology_artifacts.get(artifacts_type, ()))


class MultihostBackupHost(MultihostHost[DomainT], _MultihostBackupHost, Generic[DomainT]):
    """pytest-mh's backup host: ``start()`` and ``backup()`` once per session, ``restore(backup_data)`` after each test.

    Subclasses implement :meth:`start`, :meth:`stop`, :meth:`backup` (returns the backup data)
    and :meth:`restore` (gets it back); :meth:`remove_backup` deletes data made of paths at the
    end of the session. ``auto_restore=False`` when a ``BackupTopologyController`` restores.

    Example::

        class LDAPHost(MultihostBackupHost[MyDomain]):
            def start(self):
                self.svc.start("slapd")

            def backup(self):
                self.conn.run("slapcat -l /tmp/mh.ldif")
                return PurePosixPath("/tmp/mh.ldif")

            def restore(self, backup_data):
                self.conn.run(f"slapadd -l {backup_data}")
    """

    def __init__(self, *args: Any, auto_start: bool = True, auto_restore: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.backup_data: PurePath | Sequence[PurePath] | Any | None = None
        self._backup_auto_start = auto_start
        self._backup_auto_restore = auto_restore
        self.auto_start = auto_start
        self.auto_restore = auto_restore  # type: ignore[misc]  # per instance here, as in pytest-mh

    def start(self) -> None:
        """Start the host's services (override); ``NotImplementedError`` means there is nothing to start."""
        raise NotImplementedError()

    def stop(self) -> None:
        """Stop the host's services (override)."""
        raise NotImplementedError()

    def backup(self) -> PurePath | Sequence[PurePath] | Any | None:  # type: ignore[override]  # pytest-mh's signature
        """Back the host up and return what identifies the backup (override)."""
        raise NotImplementedError()

    def restore(self, backup_data: Any | None) -> None:  # type: ignore[override]
        """Restore the host from ``backup_data`` (override)."""
        raise NotImplementedError()

    def remove_backup(self, backup_data: PurePath | Sequence[PurePath] | Any | None) -> None:  # type: ignore[override]
        """Delete the backup: paths (one or a sequence) are removed from the host; other data is left alone."""
        if backup_data is None:
            return
        paths = [backup_data] if isinstance(backup_data, PurePath) else backup_data
        if not isinstance(paths, Sequence) or isinstance(paths, str) or not paths:
            return
        if not all(isinstance(path, PurePath) for path in paths):
            return
        if isinstance(self.shell, Powershell):
            for path in paths:
                self.conn.exec(["Remove-Item", "-Force", "-Recurse", str(path)])
        else:
            self.conn.exec(["rm", "-fr", "--", *[str(path) for path in paths]])

    def pytest_setup(self) -> None:
        """Start the services (unless ``auto_start=False``) and take the backup kept in :attr:`backup_data`."""
        if self._backup_auto_start:
            with contextlib.suppress(NotImplementedError):
                self.start()
        self.backup_data = self.backup()
        self.backup_taken = True

    def teardown(self) -> None:
        """Restore the backup after the test (unless ``auto_restore=False``)."""
        try:
            if self._backup_auto_restore and self.backup_taken:
                self.restore(self.backup_data)
        finally:
            _MultihostHost.teardown(self)  # not the project's backup host's restore: this one replaces it

    def pytest_teardown(self) -> None:
        """Remove the backup from the host (:meth:`remove_backup`)."""
        if self.backup_taken:
            self.remove_backup(self.backup_data)
            self.backup_taken = False
            self.backup_data = None
