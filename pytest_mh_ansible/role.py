"""Roles: what a test receives as a fixture — one host in one role, with the role's high-level API."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Generic, TypeVar

from .host import MultihostHost, _PlaybookOnOneHost
from .utility import MultihostUtility, _hosts_utility

if TYPE_CHECKING:
    from .multihost import MultihostFixture
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

__all__ = ["MultihostRole"]

HostT = TypeVar("HostT", bound=MultihostHost)


class MultihostRole(_PlaybookOnOneHost, Generic[HostT]):
    """One host acting in one role for one test.

    A test's role fixtures (``client``, ``server``) are role objects. Projects subclass it
    per role to give tests a high-level API, and register the subclass in ``conftest.py``
    with the ``pytest_mh_register`` hook. Utilities assigned as attributes are set up
    before the test and torn down after it.

    Example::

        class Server(MultihostRole[MultihostHost]):
            def __init__(self, mh, role, host):
                super().__init__(mh, role, host)
                self.motd = Motd(host)

            def reload(self) -> None:
                self.host.conn.run("systemctl reload app")

        def pytest_mh_register(registry):
            registry.role("server", Server)
    """

    def __init__(self, mh: MultihostFixture, role: str, host: HostT) -> None:
        self.mh = mh
        self.role = role
        self.host = host

    # -- the host's bundled utilities, as pytest-mh's users know them: ``server.fs.write(...)`` --
    fs: cached_property[FileSystem] = _hosts_utility("fs", "FileSystem")
    svc: cached_property[Services] = _hosts_utility("svc", "Services")
    users: cached_property[Users] = _hosts_utility("users", "Users")
    pkg: cached_property[Packages] = _hosts_utility("pkg", "Packages")
    sysctl: cached_property[Sysctl] = _hosts_utility("sysctl", "Sysctl")
    config_files: cached_property[ConfigFiles] = _hosts_utility("config_files", "ConfigFiles")
    firewall: cached_property[Firewall] = _hosts_utility("firewall", "Firewall")
    tc: cached_property[TrafficControl] = _hosts_utility("tc", "TrafficControl")
    logs: cached_property[Logs] = _hosts_utility("logs", "Logs")
    crashes: cached_property[Crashes] = _hosts_utility("crashes", "Crashes")

    @property
    def utilities(self) -> list[MultihostUtility[MultihostHost]]:
        """The utilities attached to this role, in attribute order."""
        return [value for value in vars(self).values() if isinstance(value, MultihostUtility)]

    def _mh_playbook_host(self) -> HostT:
        return self.host

    def setup(self) -> None:
        """Called before the test, after the role's utilities are set up (override; call super)."""

    def teardown(self) -> None:
        """Called after the test, before the role's utilities are torn down (override; call super)."""

    def __mh_describe__(self) -> str:
        return f"role {self.role!r} on host {self.host.name!r}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.role!r} on {self.host.name!r}>"
