"""The registry through which a project tells the plugin its own role, host and mark classes."""

from __future__ import annotations

from typing import Any, final

from .host import MultihostHost
from .marks import TopologyMark
from .role import MultihostRole

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

    def role_class(self, role: str) -> type[MultihostRole[Any]]:
        return self._roles.get(role, MultihostRole)

    def host_class(self, roles: tuple[str, ...]) -> type[MultihostHost]:
        """The host class of the first of ``roles`` that has one registered."""
        for role in roles:
            if role in self._hosts:
                return self._hosts[role]
        return MultihostHost
