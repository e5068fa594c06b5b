"""The shape of a multi-host environment: domains, and how many hosts of each role they hold."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["Topology", "TopologyDomain"]


class TopologyDomain:
    """A group of hosts that belong together (one AD forest, one application), with role counts.

    A host belongs to a domain through its ``mh_domain`` inventory variable (or the ini
    ``mh_default_domain``); it has a role when it is in the inventory group of that name.

    Example::

        TopologyDomain("app", client=1, server=2)   # one client and two servers in domain "app"

    Value class: the pytest-mh compatibility layer derives its own (pytest-mh's ``get`` and
    ``str``); code of this package reads counts through :meth:`count`, which both share.
    """

    def __init__(self, id: str, /, **roles: int) -> None:
        if not isinstance(id, str) or not id:
            raise ValueError(f"a topology domain needs a non-empty string id, got {id!r}")
        for role, count in roles.items():
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ValueError(f"domain {id!r}: role {role!r} needs a positive host count, got {count!r}")
        self.id = id
        self.roles: dict[str, int] = dict(roles)

    def get(self, role: str) -> int:
        """How many hosts of ``role`` the domain needs (0 when the role is not part of it)."""
        return self.count(role)

    def count(self, role: str) -> int:
        """How many hosts of ``role`` the domain needs, 0 when the role is not part of it."""
        return self.roles.get(role, 0)

    def __contains__(self, role: object) -> bool:
        return role in self.roles

    def satisfies(self, other: TopologyDomain) -> bool:
        """True when this domain has at least as many hosts of every role as ``other`` needs."""
        return self.id == other.id and all(self.count(role) >= count for role, count in other.roles.items())

    def export(self) -> dict[str, Any]:
        return {"id": self.id, "hosts": dict(self.roles)}

    def describe(self) -> str:
        """``app: client=1, server=2``"""
        return f"{self.id}: " + ", ".join(f"{role}={count}" for role, count in self.roles.items())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopologyDomain) and self.id == other.id and self.roles == other.roles

    def __hash__(self) -> int:
        return hash((self.id, tuple(sorted(self.roles.items()))))

    def __repr__(self) -> str:
        roles = "".join(f", {role}={count}" for role, count in self.roles.items())
        return f"TopologyDomain({self.id!r}{roles})"


class Topology:
    """The domains (and role counts) that a test needs.

    Example::

        Topology(TopologyDomain("app", client=1, server=1))
        Topology(TopologyDomain("ipa", client=1, ipa=1), TopologyDomain("ad", dc=1))

    Value class; the pytest-mh compatibility layer derives its own (a list of ``domains``, ``str``).
    """

    def __init__(self, *domains: TopologyDomain) -> None:
        seen: set[str] = set()
        for domain in domains:
            if not isinstance(domain, TopologyDomain):
                raise TypeError(f"Topology takes TopologyDomain objects, got {domain!r}")
            if domain.id in seen:
                raise ValueError(f"domain {domain.id!r} appears twice in a topology")
            seen.add(domain.id)
        self.domains: Sequence[TopologyDomain] = domains

    @classmethod
    def from_counts(cls, counts: Mapping[str, Mapping[str, int]]) -> Topology:
        """Build a topology from ``{domain: {role: count}}`` (domains and roles in mapping order)."""
        return cls(*(TopologyDomain(domain, **roles) for domain, roles in counts.items() if roles))

    def get(self, id: str) -> TopologyDomain:
        """The domain ``id``; ``KeyError`` when the topology has no such domain."""
        for domain in self.domains:
            if domain.id == id:
                return domain
        raise KeyError(id)

    def __contains__(self, id: object) -> bool:
        return any(domain.id == id for domain in self.domains)

    def __iter__(self) -> Iterator[TopologyDomain]:
        return iter(self.domains)

    def satisfies(self, other: Topology) -> bool:
        """True when this topology has every domain of ``other`` with at least its role counts."""
        return all(domain.id in self and self.get(domain.id).satisfies(domain) for domain in other)

    def export(self) -> list[dict[str, Any]]:
        return [domain.export() for domain in self.domains]

    def describe(self) -> str:
        """``app: client=1, server=1; ad: dc=1``"""
        return "; ".join(domain.describe() for domain in self.domains)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Topology) and tuple(self.domains) == tuple(other.domains)

    def __hash__(self) -> int:
        return hash(tuple(self.domains))

    def __repr__(self) -> str:
        return "Topology(" + ", ".join(repr(domain) for domain in self.domains) + ")"
