"""Whole-host backups: a session-long snapshot of chosen paths, restored after every test (a safety net)."""

from __future__ import annotations

import inspect
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ._private.rollback.inverses import SNAPSHOT_DIR
from .controller import TopologyController
from .errors import MultihostError, TeardownExceptionGroup
from .host import MultihostHost

__all__ = ["BackupTopologyController", "MultihostBackupHost"]

DEFAULT_BACKUP_PATHS = ("/etc", "/home", "/root", "/var/lib")
DEFAULT_BACKUP_EXCLUDE = ("/var/lib/mh-ansible", "/var/lib/systemd", "/var/lib/apt", "/var/lib/dpkg", "*.swp")


class MultihostBackupHost(MultihostHost):
    """A host that snapshots its paths once per session and restores them after every test.

    The journal undoes what goes through modules and utilities; this snapshot also catches raw
    commands and playbooks. The snapshot is taken outside the journal (in ``pytest_setup``), restored
    with ``mh_ansible.rollback.restore remove=False`` in :meth:`teardown` and removed in
    :meth:`pytest_teardown`. Paths come from :attr:`backup_paths`, else the inventory variable
    ``mh_backup_paths``, else ``/etc``, ``/home``, ``/root`` and ``/var/lib``.

    Example::

        class ServerHost(MultihostBackupHost):
            backup_paths = ("/etc", "/srv/app")

        def pytest_mh_register(registry):
            registry.host("server", ServerHost)

    Set ``auto_restore = False`` when a :class:`BackupTopologyController` restores instead.

    The contract is pytest-mh's: what :meth:`backup` returns is kept in :attr:`backup_data` and
    handed back to :meth:`restore` and :meth:`remove_backup`, so a subclass may back up anything
    its own way (a database dump, a tarball) and return whatever identifies it::

        class DbHost(MultihostBackupHost):
            def backup(self):
                return self.conn.run("mktemp -d").stdout.strip()   # ... dump into it
            def restore(self, backup_data):
                self.conn.run(f"db-restore {backup_data}")
            def remove_backup(self, backup_data):
                self.conn.run(f"rm -rf {backup_data}")
    """

    backup_name: ClassVar[str] = "mh-host-backup"
    backup_paths: ClassVar[Sequence[str] | None] = None
    backup_exclude: ClassVar[Sequence[str]] = DEFAULT_BACKUP_EXCLUDE
    auto_restore: ClassVar[bool] = True

    def __init__(self, name: str, *, roles: tuple[str, ...], domain: str, variables: Mapping[str, Any]) -> None:
        super().__init__(name, roles=roles, domain=domain, variables=variables)
        self.backup_taken: bool = False
        self.backup_data: Any = None

    def mh_backup_paths(self) -> list[str]:
        """The paths to back up: :attr:`backup_paths`, the ``mh_backup_paths`` variable, or the defaults."""
        paths = self.backup_paths if self.backup_paths is not None else self.vars.get("mh_backup_paths")
        if paths is None:
            paths = DEFAULT_BACKUP_PATHS
        if isinstance(paths, str):
            paths = [paths]
        return [str(p) for p in paths]

    def backup(self, name: str | None = None) -> Any:
        """Snapshot the backup paths under ``name`` (outside the journal); returns the name (the backup data)."""
        name = name or self.backup_name
        self.conn.run(f"mkdir -p -m 0700 {shlex.quote(SNAPSHOT_DIR)}")
        self._modules_run(
            "mh_ansible.rollback.snapshot",
            paths=self.mh_backup_paths(),
            name=name,
            backup_dir=SNAPSHOT_DIR,
            exclude=list(self.backup_exclude),
        )
        return name

    def restore(self, name: Any = None) -> None:
        """Put the backup paths back as snapshot ``name`` (what :meth:`backup` returned) has them; it is kept."""
        self._modules_run(
            "mh_ansible.rollback.restore", name=name or self.backup_name, backup_dir=SNAPSHOT_DIR, remove=False
        )

    def remove_backup(self, name: Any = None) -> None:
        """Delete snapshot ``name`` (what :meth:`backup` returned) from the host."""
        self.conn.run(f"rm -rf -- {shlex.quote(f'{SNAPSHOT_DIR}/{name or self.backup_name}')}")

    def _modules_run(self, module: str, **kwargs: Any) -> None:
        # The rollback collection's own modules are never recorded by the journal.
        self.ansible.run(module, **kwargs)

    def pytest_setup(self) -> None:
        """Take the session-long snapshot (call super when overriding, after your own setup)."""
        super().pytest_setup()
        self.backup_data = self.backup()
        self.backup_taken = True

    def teardown(self) -> None:
        """Restore the snapshot after each test (when :attr:`auto_restore`); call super when overriding."""
        try:
            if self.auto_restore and self.backup_taken:
                self.restore(self.backup_data)
        finally:
            super().teardown()

    def pytest_teardown(self) -> None:
        """Remove the snapshot at the end of the session."""
        try:
            if self.backup_taken:
                self.remove_backup(self.backup_data)
                self.backup_taken = False
                self.backup_data = None
        finally:
            super().pytest_teardown()


class BackupTopologyController(TopologyController):
    """Snapshot the topology's hosts after :meth:`topology_setup`; restore after each test; drop at the end.

    Subclasses do their own setup, then call ``super().topology_setup(**hosts)`` last, so that the
    snapshot holds the prepared state; and call ``super().topology_teardown(**hosts)``.

    Example::

        class LdapController(BackupTopologyController):
            def topology_setup(self, **hosts):
                hosts["server"].fs.write("/etc/ldap/extra.ldif", "...")
                super().topology_setup(**hosts)
    """

    def __init__(self) -> None:
        super().__init__()
        self.backups: dict[str, Any] = {}
        """What each host's :meth:`MultihostBackupHost.backup` returned, by host name (pytest-mh's ``backup_data``)."""

    def _backup_hosts(self, hosts: Mapping[str, Any]) -> list[MultihostBackupHost]:
        found: dict[str, MultihostBackupHost] = {}
        for value in hosts.values():
            for item in value if isinstance(value, list) else [value]:
                host = getattr(item, "host", item)
                if isinstance(host, MultihostBackupHost):
                    found[host.name] = host
        return list(found.values())

    def topology_setup(self, **hosts: Any) -> None:
        """Snapshot every :class:`MultihostBackupHost` of the topology (call last from overrides)."""
        for host in self._backup_hosts(hosts or self.hosts):
            self.backups[host.name] = _backup(host, f"mh-topology-backup-{self.name or 'topology'}")

    def teardown(self, **hosts: Any) -> None:
        """Restore every host to its topology snapshot; failures are raised together."""
        self._each(hosts, lambda host, name: host.restore(name), "restore")

    def topology_teardown(self, **hosts: Any) -> None:
        """Remove the topology snapshots (call from overrides)."""
        try:
            self._each(hosts, lambda host, name: host.remove_backup(name), "remove backup")
        finally:
            self.backups.clear()

    @property
    def backup_data(self) -> dict[str, Any]:
        """pytest-mh's name of :attr:`backups`."""
        return self.backups

    def _each(self, hosts: Mapping[str, Any], action: Any, what: str) -> None:
        errors: list[Exception] = []
        for host in self._backup_hosts(hosts or self.hosts):
            name = self.backups.get(host.name)
            if name is None:
                continue
            try:
                action(host, name)
            except Exception as err:
                failure = MultihostError(f"{host.name}: {what} of snapshot {name!r} failed: {err}")
                failure.__cause__ = err
                errors.append(failure)
        if errors:
            raise TeardownExceptionGroup(f"topology {self.name!r}: {what} failed on {len(errors)} host(s)", errors)


def _backup(host: MultihostBackupHost, name: str) -> Any:
    """``host.backup(name)``, or ``host.backup()`` for a pytest-mh style ``backup`` that takes no name."""
    try:
        params = inspect.signature(host.backup).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    return host.backup(name) if params else host.backup()
