"""Hosts: one inventory host, its variables, its connection and its session-long hooks."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, final

if TYPE_CHECKING:
    from ._private.ansible.playbooks import PlaybookRunner
    from .conn import Connection
    from .modules import HostModules
    from .playbook import PlaybookResult
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

    def playbook(
        self,
        path: str,
        *,
        extra_vars: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        skip_tags: Sequence[str] | None = None,
        check: bool = False,
        become: bool | None = None,
        revert_paths: Sequence[str] | None = None,
        teardown: str | None = None,
        raise_on_error: bool | None = None,
    ) -> PlaybookResult:
        """Run a playbook limited to this host (for a role: the role's host), with the inventory's variables.

        Example::

            result = server.playbook("playbooks/app_setup.yml", extra_vars={"app_port": 8080})
            assert result.changed_tasks   # a failing playbook raises PlaybookError

        :param path: Relative to pytest's rootdir (then the ini ``mh_playbook_dir``), or absolute.
        :param check: Run in check mode (predict changes, make none).
        :param become: Force privilege escalation on (True) for the whole play.
        :param revert_paths: Paths the playbook changes: snapshotted before, restored at the end of the scope.
        :param teardown: A playbook that undoes this one, run at the end of the scope if anything changed.
        :param raise_on_error: Raise when the playbook fails; None (the default) means yes, except with ``check=True``.
        :raises PlaybookError: A task failed, a host was unreachable, or Ansible could not run the playbook
            (a parse error): names the failed tasks, their hosts and Ansible's message.
        """
        host = self._mh_playbook_host()
        if host._mh_playbooks is None:
            from .errors import MultihostError

            raise MultihostError(f"host {host.name!r}: playbooks need a pytest-mh-ansible session")
        return host._mh_playbooks.run_reverted(
            path,
            [host],
            extra_vars=extra_vars,
            tags=tags,
            skip_tags=skip_tags,
            check=check,
            become=become,
            revert_paths=revert_paths,
            teardown=teardown,
            raise_on_error=raise_on_error,
        )


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
    @cached_property
    def fs(self) -> FileSystem:
        """Files and directories (``host.fs.write(path, text)``); see :class:`~pytest_mh_ansible.utils.FileSystem`."""
        from .utils.fs import FileSystem

        return FileSystem(self)

    @cached_property
    def svc(self) -> Services:
        """Services (``host.svc.restart(name)``); see :class:`~pytest_mh_ansible.utils.Services`."""
        from .utils.services import Services

        return Services(self)

    @cached_property
    def users(self) -> Users:
        """Users and groups (``host.users.add(name)``); see :class:`~pytest_mh_ansible.utils.Users`."""
        from .utils.users import Users

        return Users(self)

    @cached_property
    def pkg(self) -> Packages:
        """Packages (``host.pkg.install(name)``); see :class:`~pytest_mh_ansible.utils.Packages`."""
        from .utils.packages import Packages

        return Packages(self)

    @cached_property
    def sysctl(self) -> Sysctl:
        """Kernel parameters; see :class:`~pytest_mh_ansible.utils.Sysctl`."""
        from .utils.sysctl import Sysctl

        return Sysctl(self)

    @cached_property
    def config_files(self) -> ConfigFiles:
        """Configuration files (ini options, lines, blocks); see :class:`~pytest_mh_ansible.utils.ConfigFiles`."""
        from .utils.config import ConfigFiles

        return ConfigFiles(self)

    @cached_property
    def firewall(self) -> Firewall:
        """The firewall (``host.firewall.inbound.reject_host(address)``); see :class:`~pytest_mh_ansible.Firewall`."""
        from .utils.firewall import Firewall

        return Firewall(self)

    @cached_property
    def tc(self) -> TrafficControl:
        """Traffic control (delay, loss, rate); see :class:`~pytest_mh_ansible.utils.TrafficControl`."""
        from .utils.tc import TrafficControl

        return TrafficControl(self)

    @cached_property
    def logs(self) -> Logs:
        """Logs since the test started; see :class:`~pytest_mh_ansible.utils.Logs`."""
        from .utils.logs import Logs

        return Logs(self)

    @cached_property
    def crashes(self) -> Crashes:
        """Core dumps and denials during the test; see :class:`~pytest_mh_ansible.utils.Crashes`."""
        from .utils.crashes import Crashes

        return Crashes(self)

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
