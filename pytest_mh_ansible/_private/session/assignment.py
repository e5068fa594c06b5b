"""Which inventory hosts fill which slots of a topology: deterministic, one slot per host."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...topology import Topology

__all__ = ["Assignment", "HostInfo", "assign"]


@dataclass(frozen=True)
class HostInfo:
    """What the assignment needs to know of a host."""

    name: str
    roles: tuple[str, ...]
    domain: str
    pool: str | None = None  # the host's mh_pool (fleets: one run of the suite per pool)


@dataclass(frozen=True)
class Assignment:
    """The hosts chosen for each ``(domain, role)`` of a topology, in slot order."""

    slots: dict[tuple[str, str], tuple[str, ...]]

    @property
    def hosts(self) -> tuple[str, ...]:
        """Every host used, in slot order, without duplicates."""
        seen: dict[str, None] = {}
        for names in self.slots.values():
            seen.update(dict.fromkeys(names))
        return tuple(seen)


def assign(name: str, topology: Topology, hosts: Sequence[HostInfo]) -> Assignment | str:
    """Fill the topology's slots with hosts, or explain why the inventory cannot.

    Hosts are taken in inventory order; a host that has several roles fills one slot
    only. A maximum bipartite matching (augmenting paths, slots and candidates in a fixed
    order) finds an assignment whenever one exists, and always the same one.

    :returns: The assignment, or the reason (a sentence) why there is none.
    """
    slots: list[tuple[str, str]] = []
    candidates: list[list[int]] = []
    for domain in topology:
        in_domain = [i for i, host in enumerate(hosts) if host.domain == domain.id]
        for role, count in domain.roles.items():
            having = [i for i in in_domain if role in hosts[i].roles]
            if len(having) < count:
                return _shortage(name, domain.id, role, count, having=[hosts[i] for i in having], hosts=hosts)
            for _ in range(count):
                slots.append((domain.id, role))
                candidates.append(having)

    owner: dict[int, int] = {}  # host index -> slot index

    def augment(slot: int, visited: set[int]) -> bool:
        for host in candidates[slot]:
            if host not in owner:  # a free host first: keeps earlier slots on earlier hosts
                owner[host] = slot
                return True
        for host in candidates[slot]:
            if host in visited:
                continue
            visited.add(host)
            if augment(owner[host], visited):
                owner[host] = slot
                return True
        return False

    for slot in range(len(slots)):
        if not augment(slot, set()):
            domain_id, role = slots[slot]
            wanted = [f"{r}={c}" for r, c in topology.get(domain_id).roles.items()]
            pool = sorted({i for s, (d, _) in enumerate(slots) if d == domain_id for i in candidates[s]})
            listing = ", ".join(f"{hosts[i].name} ({', '.join(hosts[i].roles)})" for i in pool)
            return (
                f"topology {name!r} needs distinct hosts for {', '.join(wanted)} in domain {domain_id!r}; "
                f"a host fills one slot at a time and the inventory has only {listing}"
            )

    chosen: dict[tuple[str, str], list[int]] = {}
    for host, slot in owner.items():
        chosen.setdefault(slots[slot], []).append(host)
    # Within a role, hosts keep their inventory order ([0] is the first such host).
    return Assignment({key: tuple(hosts[i].name for i in sorted(chosen[key])) for key in dict.fromkeys(slots)})


def _shortage(
    name: str, domain: str, role: str, count: int, *, having: list[HostInfo], hosts: Sequence[HostInfo]
) -> str:
    need = f"topology {name!r} needs {count} host{'s' if count != 1 else ''} with role {role!r} in domain {domain!r}"
    in_domain = [host for host in hosts if host.domain == domain]
    if not in_domain:
        domains = sorted({host.domain for host in hosts})
        known = f"domains: {', '.join(domains)}" if domains else "it has no hosts"
        return f"{need}; the inventory has no host in domain {domain!r} ({known})"
    if not having:
        groups = sorted({role for host in in_domain for role in host.roles})
        return f"{need}; the inventory has none (groups: {', '.join(groups)})"
    return f"{need}; the inventory has {len(having)} ({', '.join(host.name for host in having)})"
