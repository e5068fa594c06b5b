"""Hosts: one inventory host, its variables, its connection and its session-long hooks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Unpack, final

from .utility import _bundled

if TYPE_CHECKING:
    from ._private.ansible.playbooks import PlaybookRunner
    from .conn import Connection
    from .modules import HostModules
    from .playbook import PlaybookOptions, PlaybookResult
    from .rollback import RollbackJournal
    from .utils.config import ConfigFiles
    from .utils.crashes import Crashes
    from .utils.firewall import Firewall
    from .utils.fs import FileSystem
    from .utils.logs import Logs
    from .utils.packages import Packages
    from .utils.services import Services
    from .utils.sysctl import Sysctl
    from .utils.tc import TrafficControl
    from .utils.users import Users

__all__ = ["MultihostHost"]


@final
@dataclass(frozen=True)
class HostServices:
    """What a session gives each of its hosts (see :meth:`MultihostHost._mh_attach`).

    :ivar connection: Makes the host's connection on first use (the session guards it against dead hosts).
    :ivar modules: The host's Ansible modules (``host.ansible``), reporting changes to the journal.
    :ivar journal: The session's rollback journal.
    :ivar playbooks: Runs playbooks with the session's inventory.
    """

    connection: Callable[[], Connection]
    modules: HostModules
    journal: RollbackJournal
    playbooks: PlaybookRunner


class _PlaybookOnOneHost:
    """``playbook()`` of what stands for one host: the host itself, and a role on it.

    One signature, docstring and way to the session's playbook runner serve both. The API
    reference lists the method under each class, as a private base's methods are their own.
    """

    def _mh_playbook_host(self) -> MultihostHost:
        """The host the playbook is limited to (each subclass names it)."""
        raise NotImplementedError

    def playbook(self, path: str, **options: Unpack[PlaybookOptions]) -> PlaybookResult:
        """Run a playbook limited to this host (for a role: the role's host), with the inventory's variables.

        Example::

            result = server.playbook("playbooks/app_setup.yml", extra_vars={"app_port": 8080})
            assert result.changed_tasks   # a failing playbook raises PlaybookError

        :param path: Relative to pytest's rootdir (then the ini ``mh_playbook_dir``), or absolute.
        :param options: The keywords of :class:`~pytest_mh_ansible.PlaybookOptions`: ``extra_vars``,
            ``tags``, ``skip_tags``, ``check``, ``become``, ``revert_paths`` (paths the playbook changes:
            snapshotted before, restored at the end of the scope), ``teardown`` (a playbook that undoes
            this one) and ``raise_on_error`` (None, the default, means yes except with ``check=True``).
        :raises PlaybookError: A task failed, a host was unreachable, or Ansible could not run the playbook
            (a parse error): names the failed tasks, their hosts and Ansible's message.
        :raises TypeError: An unknown keyword.
        """
        host = self._mh_playbook_host()
        if host._mh_playbooks is None:
            from .errors import MultihostError

            raise MultihostError(f"host {host.name!r}: playbooks need a pytest-mh-ansible session")
        return host._mh_playbooks.run_reverted(path, [host], **options)


class MultihostHost(_PlaybookOnOneHost):
    """A host of the Ansible inventory, as tests and roles see it.

    One object per inventory host lives for the whole session. :meth:`pytest_setup` runs
    once, before the first test that needs the host; :meth:`pytest_teardown` once at the
    end of the session; :meth:`setup`/:meth:`teardown` around every test on the host.
    Projects subclass it per role (register with ``pytest_mh_register``) to add
    host-level state such as detected features.

    Example::

        class AppHost(MultihostHost):
            def pytest_setup(self) -> None:
                self.version = self.conn.run("app --version").stdout.strip()

    :ivar name: The inventory hostname.
    :ivar hostname: The name other hosts know it by (``mh_hostname``, else the inventory name).
    :ivar address: Where the controller connects (``ansible_host``, else the name).
    :ivar roles: The roles (inventory groups) of the host.
    :ivar domain: The topology domain (``mh_domain``).
    :ivar vars: Every Ansible variable of the host, vault values decrypted.
    :ivar config: The free-form ``mh_config`` variable (a dict).
    """

    def __init__(self, name: str, *, roles: tuple[str, ...], domain: str, variables: Mapping[str, Any]) -> None:
        self.name = name
        self.roles = roles
        self.domain = domain
        self.vars: Mapping[str, Any] = variables
        self.hostname: str = str(variables.get("mh_hostname") or name)
        self.address: str = str(variables.get("ansible_host") or name)
        config = variables.get("mh_config") or {}
        self.config: dict[str, Any] = dict(config) if isinstance(config, Mapping) else {}
        self.os_family: str = str(variables.get("mh_os_family") or "linux").lower()
        self.artifacts: Any = variables.get("mh_artifacts") or []
        self._conn: Connection | None = None
        self._mh_services: HostServices | None = None
        self._mh_playbooks: PlaybookRunner | None = None
        self._mh_modules: HostModules | None = None
        self._mh_journal: RollbackJournal | None = None

    def _mh_attach(self, services: HostServices) -> None:
        """Called once by the session that made the host: its connection, modules, journal and playbooks."""
        self._mh_services = services
        self._mh_playbooks = services.playbooks
        self._mh_modules = services.modules
        self._mh_journal = services.journal

    @property
    def conn(self) -> Connection:
        """The host's connection (Ansible connection plugin, opened on first use, kept for the session)."""
        if self._conn is None:
            if self._mh_services is not None:
                self._conn = self._mh_services.connection()
            else:
                from .conn import Connection

                self._conn = Connection(self.name, self.vars)
        return self._conn

    @property
    def ansible(self) -> HostModules:
        """Ansible modules on this host: ``host.ansible.run("ansible.builtin.copy", dest=..., content=...)``.

        Every change is recorded in the rollback journal and undone at the end of the scope it was
        made in (the test, the topology setup or the session setup).
        """
        if self._mh_modules is None:
            from .errors import MultihostError

            raise MultihostError(f"host {self.name!r}: Ansible modules need a pytest-mh-ansible session")
        return self._mh_modules

    @property
    def journal(self) -> RollbackJournal:
        """The session's rollback journal: record the inverse of a change made without a module.

        Example::

            host.conn.run("nft add table inet t")
            host.journal.record(host, "nft table inet t", lambda: host.conn.run("nft delete table inet t"))
        """
        if self._mh_journal is None:
            from .errors import MultihostError

            raise MultihostError(f"host {self.name!r}: the rollback journal needs a pytest-mh-ansible session")
        return self._mh_journal

    # -- bundled utilities: created on first use (a subclass may assign its own in __init__) -----
    fs: cached_property[FileSystem] = _bundled(
        "fs.FileSystem", "Files and directories (``host.fs.write(path, text)``)."
    )
    svc: cached_property[Services] = _bundled("services.Services", "Services (``host.svc.restart(name)``).")
    users: cached_property[Users] = _bundled("users.Users", "Users and groups (``host.users.add(name)``).")
    pkg: cached_property[Packages] = _bundled("packages.Packages", "Packages (``host.pkg.install(name)``).")
    sysctl: cached_property[Sysctl] = _bundled("sysctl.Sysctl", "Kernel parameters.")
    config_files: cached_property[ConfigFiles] = _bundled(
        "config.ConfigFiles", "Configuration files (ini options, lines, blocks)."
    )
    firewall: cached_property[Firewall] = _bundled(
        "firewall.Firewall", "The firewall (``host.firewall.inbound.reject_host(address)``)."
    )
    tc: cached_property[TrafficControl] = _bundled("tc.TrafficControl", "Traffic control (delay, loss, rate).")
    logs: cached_property[Logs] = _bundled("logs.Logs", "Logs since the test started.")
    crashes: cached_property[Crashes] = _bundled("crashes.Crashes", "Core dumps and denials during the test.")

    @property
    def mh_vars(self) -> dict[str, Any]:
        """The host's ``mh_*`` variables (``mh_domain``, ``mh_artifacts``, ...)."""
        return {k: v for k, v in self.vars.items() if k.startswith("mh_")}

    def _mh_playbook_host(self) -> MultihostHost:
        return self

    def pytest_setup(self) -> None:
        """Called once per session, before the first test that needs the host (override)."""

    def pytest_teardown(self) -> None:
        """Called once at the end of the session for every host that was set up (override)."""

    def setup(self) -> None:
        """Called before each test that uses the host (override)."""

    def teardown(self) -> None:
        """Called after each test that used the host, even when it failed (override)."""

    def _mh_close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __mh_describe__(self) -> str:
        return f"host {self.name!r}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} roles={list(self.roles)} domain={self.domain!r}>"
