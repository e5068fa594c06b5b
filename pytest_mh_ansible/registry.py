"""The registry through which a project tells the plugin its own role, host and mark classes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, final

from .host import MultihostHost
from .marks import TopologyMark
from .multihost import MultihostFixture
from .role import MultihostRole

HostFactory = Callable[[str, tuple[str, ...], str, Mapping[str, Any]], MultihostHost]
"""``factory(name, roles, domain, variables) -> MultihostHost``."""
RoleFactory = Callable[["MultihostFixture", str, MultihostHost], MultihostRole[Any]]
"""``factory(mh, role, host) -> MultihostRole``."""

__all__ = ["Registry"]


@final
class Registry:
    """Project classes per role name, filled by the ``pytest_mh_register`` hook in ``conftest.py``.

    Example::

        # conftest.py
        def pytest_mh_register(registry):
            registry.role("client", Client)                  # Client subclasses MultihostRole
            registry.role("server", Server, host=ServerHost) # ServerHost subclasses MultihostHost
            registry.host("ldap", LDAPHost)

    A role without a registration gets :class:`MultihostRole`; a host whose roles have no
    registered host class gets :class:`MultihostHost`.
    """

    def __init__(self) -> None:
        self._roles: dict[str, type[MultihostRole[Any]]] = {}
        self._hosts: dict[str, type[MultihostHost]] = {}
        self.mark_class: type[TopologyMark] = TopologyMark
        self.fixture_class: type[MultihostFixture] = MultihostFixture
        """The class of the ``mh`` object (a subclass of :class:`MultihostFixture`, as the compatibility layer's)."""
        self._host_factory: HostFactory | None = None
        self._role_factory: RoleFactory | None = None

    def role(self, name: str, role_class: type[MultihostRole[Any]], *, host: type[MultihostHost] | None = None) -> None:
        """Use ``role_class`` for role ``name`` (and ``host`` for hosts in that role)."""
        if not isinstance(role_class, type) or not issubclass(role_class, MultihostRole):
            raise TypeError(f"role {name!r}: {role_class!r} is not a subclass of MultihostRole")
        self._roles[name] = role_class
        if host is not None:
            self.host(name, host)

    def host(self, name: str, host_class: type[MultihostHost]) -> None:
        """Use ``host_class`` for hosts in role ``name``."""
        if not isinstance(host_class, type) or not issubclass(host_class, MultihostHost):
            raise TypeError(f"role {name!r}: {host_class!r} is not a subclass of MultihostHost")
        self._hosts[name] = host_class

    def topology_mark(self, mark_class: type[TopologyMark]) -> None:
        """Use a subclass of :class:`TopologyMark` for ad hoc ``@pytest.mark.topology(name, topology, ...)``."""
        if not isinstance(mark_class, type) or not issubclass(mark_class, TopologyMark):
            raise TypeError(f"{mark_class!r} is not a subclass of TopologyMark")
        self.mark_class = mark_class

    def factories(self, *, host: HostFactory | None = None, role: RoleFactory | None = None) -> None:
        """Make host and role objects yourself instead of by class per role name.

        For a project whose classes depend on more than the role (its domain, the host's
        variables), as pytest-mh's ``MultihostDomain.role_to_host_class`` does; the
        pytest-mh compatibility layer uses it. A factory gets what a class would get.

        :param host: ``host(name, roles, domain, variables)`` returns the session's host object.
        :param role: ``role(mh, role, host)`` returns a test's role object.
        """
        if host is not None:
            self._host_factory = host
        if role is not None:
            self._role_factory = role

    def make_host(self, name: str, roles: tuple[str, ...], domain: str, variables: Mapping[str, Any]) -> MultihostHost:
        """The host object of inventory host ``name`` (the host factory's, else the registered class's)."""
        if self._host_factory is not None:
            return self._host_factory(name, roles, domain, variables)
        return self.host_class(roles)(name, roles=roles, domain=domain, variables=variables)

    def make_role(self, mh: MultihostFixture, role: str, host: MultihostHost) -> MultihostRole[Any]:
        """A test's object for ``host`` in ``role`` (the role factory's, else the registered class's)."""
        if self._role_factory is not None:
            return self._role_factory(mh, role, host)
        return self.role_class(role)(mh, role, host)

    def role_class(self, role: str) -> type[MultihostRole[Any]]:
        return self._roles.get(role, MultihostRole)

    def host_class(self, roles: tuple[str, ...]) -> type[MultihostHost]:
        """The host class of the first of ``roles`` that has one registered."""
        for role in roles:
            if role in self._hosts:
                return self._hosts[role]
        return MultihostHost
