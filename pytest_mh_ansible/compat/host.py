"""pytest-mh's hosts: ``MultihostHost(domain, confdict)`` and ``MultihostBackupHost`` on inventory hosts."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from enum import Enum
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .. import MultihostBackupHost as _MultihostBackupHost
from .. import MultihostHost as _MultihostHost
from .cli import CLIBuilder
from .conn import DEFAULT_TIMEOUT, Bash, Connection, Powershell, Shell
from .logger import MultihostLogger, logger_for

if TYPE_CHECKING:
    from .config import MultihostDomain

__all__ = ["MultihostBackupHost", "MultihostHost", "MultihostOSFamily"]

DomainT = TypeVar("DomainT", bound="MultihostDomain[Any]")


class MultihostOSFamily(Enum):
    """The host's operating system family (``mh_os_family``; pytest-mh's ``os.family``)."""

    Linux = "linux"
    Windows = "windows"


class MultihostHost(_MultihostHost, Generic[DomainT]):
    """pytest-mh's host: made by its domain from a ``confdict``, with ``conn``, ``cli``, ``logger``.

    The inventory host of the same name gives the connection and the variables; the
    ``confdict`` is what pytest-mh would have read from ``mhc.yaml``: ``hostname``, ``role``,
    ``config`` (the ``mh_config`` variable), ``artifacts`` (``mh_artifacts``) and ``os``.

    Example::

        class ClientHost(MultihostHost[MyDomain]):
            def pytest_setup(self):
                self.features = {"bash": self.conn.run("command -v bash", raise_on_error=False).rc == 0}
    """

    def __init__(self, domain: DomainT, confdict: dict[str, Any]) -> None:
        name = str(confdict["hostname"])
        roles, variables = domain._mh_inventory.get(name, ((str(confdict.get("role", "")),), {}))
        super().__init__(name, roles=roles, domain=domain.id, variables=variables)
        self.mh_domain: DomainT = domain
        self.confdict = confdict
        self.role: str = str(confdict.get("role", ""))
        self.hostname = name
        self.config = dict(confdict.get("config") or {})
        self.logger: MultihostLogger = logger_for("host", name)
        family = str((confdict.get("os") or {}).get("family", "linux")).lower()
        os_family = MultihostOSFamily(family)
        self.os_family = os_family  # type: ignore[assignment]  # pytest-mh's enum where ours has a str
        self.shell: Shell = Powershell() if os_family is MultihostOSFamily.Windows else Bash()
        self.cli = CLIBuilder(self.shell)
        artifacts = confdict.get("artifacts") or []
        self.configured_artifacts: Any = artifacts
        timeout = variables.get("mh_command_timeout")
        self._mh_timeout = float(timeout) if timeout else DEFAULT_TIMEOUT
        self._mh_compat_conn: Connection | None = None
        domain.hosts.append(self)

    @property
    def conn(self) -> Connection:  # type: ignore[override]  # pytest-mh's connection API over ours
        """pytest-mh's connection: ``run`` (bash), ``exec``, ``expect``, over the host's Ansible connection."""
        if self._mh_compat_conn is None:
            self._mh_compat_conn = Connection(super().conn, self.shell, host=self.hostname, timeout=self._mh_timeout)
        return self._mh_compat_conn

    def get_artifacts_list(self, host: MultihostHost[Any], artifacts_type: str) -> set[str]:
        """Files to collect (the configured list); kept for subclasses that extend it."""
        configured = self.configured_artifacts
        if isinstance(configured, dict):
            return set(configured.get(artifacts_type) or [])
        return set(configured) if artifacts_type == "test" else set()


class MultihostBackupHost(MultihostHost[DomainT], _MultihostBackupHost, Generic[DomainT]):
    """pytest-mh's backup host: ``start()`` and ``backup()`` once per session, ``restore(data)`` after each test.

    Subclasses implement :meth:`start`, :meth:`stop`, :meth:`backup` (returns the backup data)
    and :meth:`restore` (gets it back); :meth:`remove_backup` deletes data made of paths.
    ``auto_restore=False`` when a :class:`~pytest_mh_ansible.BackupTopologyController` restores.
    """

    def __init__(self, *args: Any, auto_start: bool = True, auto_restore: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.auto_start = auto_start
        self.auto_restore = auto_restore  # type: ignore[misc]  # per instance here, as in pytest-mh

    def start(self) -> None:
        """Start the host's services (override); ``NotImplementedError`` means there is nothing to start."""
        raise NotImplementedError()

    def stop(self) -> None:
        """Stop the host's services (override)."""
        raise NotImplementedError()

    def backup(self) -> Any:  # type: ignore[override]  # pytest-mh's signature
        """Back the host up and return what identifies the backup (override)."""
        raise NotImplementedError()

    def restore(self, backup_data: Any) -> None:  # type: ignore[override]
        """Restore the host from ``backup_data`` (override)."""
        raise NotImplementedError()

    def remove_backup(self, backup_data: Any) -> None:  # type: ignore[override]
        """Delete the backup: paths (one or a list) are removed from the host; other data is left."""
        if backup_data is None:
            return
        if isinstance(backup_data, PurePath):
            paths = [backup_data]
        elif isinstance(backup_data, Sequence) and all(isinstance(p, PurePath) for p in backup_data):
            paths = list(backup_data)
        else:
            return
        if paths:
            self.conn.exec(["rm", "-fr", "--", *[str(p) for p in paths]])

    def pytest_setup(self) -> None:
        if self.auto_start:
            with contextlib.suppress(NotImplementedError):
                self.start()
        self.backup_data = self.backup()
        self.backup_taken = True

    def teardown(self) -> None:
        if self.auto_restore and self.backup_taken:
            self.restore(self.backup_data)

    def pytest_teardown(self) -> None:
        if self.backup_taken:
            self.remove_backup(self.backup_data)
            self.backup_taken = False
            self.backup_data = None
