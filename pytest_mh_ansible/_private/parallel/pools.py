"""Which free hosts a worker gets for a topology: the bookkeeping of the pool scheduler.

A *unit* of work is a topology and one set of hosts that fills it. A worker holds the hosts of
its unit until the last test of the unit has finished; no other worker gets them meanwhile.
Nothing here knows pytest or xdist, so that the rules can be tested alone (tests/unit/test_pools.py).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field

from ...topology import Topology
from ..session.assignment import Assignment, HostInfo, assign

__all__ = ["HostPools", "Lease"]


@dataclass
class Lease:
    """The hosts a worker holds: those of its current unit, and those of units still finishing."""

    topology: str | None = None
    assignment: Assignment | None = None
    finishing: list[tuple[frozenset[str], int]] = field(default_factory=list)
    """Hosts of earlier units, each with the test index whose completion releases them."""

    @property
    def hosts(self) -> frozenset[str]:
        current = frozenset(self.assignment.hosts) if self.assignment is not None else frozenset()
        return current.union(*(hosts for hosts, _ in self.finishing))


class HostPools:
    """The inventory's hosts and who holds them: hands out free assignments, never one host twice.

    Example::

        pools = HostPools(host_infos)
        assignment = pools.take("gw0", "pair", Topology(TopologyDomain("app", client=1, server=1)))
        pools.finish("gw0", last_index=41)   # gw0 moves on; its hosts are busy until test 41 is done
        pools.completed("gw0", 41)           # now they are free
    """

    def __init__(self, hosts: Sequence[HostInfo]) -> None:
        self._hosts = list(hosts)
        self._leases: dict[Hashable, Lease] = {}
        self._used: dict[str, set[Hashable]] = {}  # host -> workers that have used it (their session setup ran)

    def lease(self, worker: Hashable) -> Lease:
        return self._leases.setdefault(worker, Lease())

    def busy_for(self, worker: Hashable) -> frozenset[str]:
        """The hosts that other workers hold."""
        return frozenset().union(*(lease.hosts for other, lease in self._leases.items() if other != worker))

    def holders(self, topology: str) -> int:
        """How many workers hold a set of hosts for ``topology`` now."""
        return sum(1 for lease in self._leases.values() if lease.topology == topology)

    def candidates(self, worker: Hashable, pool: str | None = None) -> list[HostInfo]:
        """The hosts ``worker`` may take, best first: its own, then unused ones, then those others set up.

        The order keeps a worker on the hosts it already set up, so that a host's session setup
        runs in as few workers as possible.
        """
        busy = self.busy_for(worker)
        mine = self.lease(worker).hosts

        def rank(info: HostInfo) -> int:
            users = self._used.get(info.name, set())
            if info.name in mine:
                return 0
            if worker in users:
                return 1
            return 2 if not users else 3

        free = [info for info in self._hosts if info.name not in busy and (pool is None or info.pool == pool)]
        return sorted(free, key=rank)  # sorted() is stable: inventory order within a rank

    def find(self, worker: Hashable, name: str, topology: Topology, pool: str | None = None) -> Assignment | None:
        """A free assignment of ``topology`` (in ``pool``) for ``worker``; None when the free hosts cannot fill it."""
        found = assign(name, topology, self.candidates(worker, pool))
        return found if isinstance(found, Assignment) else None

    def take(
        self,
        worker: Hashable,
        name: str,
        topology: Topology,
        *,
        pool: str | None = None,
        last_index: int | None = None,
    ) -> Assignment | None:
        """Give ``worker`` a free assignment of ``topology`` and make it its current unit.

        :param last_index: The worker's last pending test of its previous unit, if any: the
            previous unit's hosts stay busy until it completes.
        :returns: The assignment, or None (nothing changes) when no free one exists.
        """
        found = self.find(worker, name, topology, pool)
        if found is None:
            return None
        self.finish(worker, last_index)
        lease = self.lease(worker)
        lease.topology, lease.assignment = name, found
        for host in found.hosts:
            self._used.setdefault(host, set()).add(worker)
        return found

    def finish(self, worker: Hashable, last_index: int | None) -> None:
        """End ``worker``'s current unit; its hosts stay busy until test ``last_index`` completes (None: now)."""
        lease = self.lease(worker)
        if lease.assignment is not None and last_index is not None:
            lease.finishing.append((frozenset(lease.assignment.hosts), last_index))
        lease.topology, lease.assignment = None, None

    def completed(self, worker: Hashable, index: int) -> bool:
        """Test ``index`` of ``worker`` is done: release the hosts that waited for it.

        :returns: Whether any hosts became free.
        """
        lease = self.lease(worker)
        before = len(lease.finishing)
        lease.finishing = [(hosts, last) for hosts, last in lease.finishing if last != index]
        return len(lease.finishing) != before

    def release(self, worker: Hashable) -> None:
        """The worker is gone (finished or crashed): everything it held is free."""
        self._leases.pop(worker, None)

    def held(self) -> dict[Hashable, frozenset[str]]:
        """Every worker's hosts (for checks and logs)."""
        return {worker: lease.hosts for worker, lease in self._leases.items() if lease.hosts}


def disjoint(held: Iterable[frozenset[str]]) -> bool:
    """Whether no host appears in two of the sets (the invariant of :class:`HostPools`)."""
    seen: set[str] = set()
    for hosts in held:
        if seen & hosts:
            return False
        seen |= hosts
    return True
