"""The pool scheduler: pytest-xdist hands out (topology, set of hosts) units instead of single tests.

With ``-n N`` and an inventory, xdist asks the ``pytest_xdist_make_scheduler`` hook for its
scheduler and gets :class:`PoolScheduling`. Each worker that needs work gets a topology and a
free assignment of its roles (:class:`.pools.HostPools`); it keeps those hosts for every test of
that topology it runs, and gives them back when the unit's last test is done. Several workers
run one topology at once when the inventory has several host sets for it. See docs/parallel.md.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..session.assignment import HostInfo
from .pools import HostPools
from .worker import append_placement, read_collection

if TYPE_CHECKING:
    from ...topology import Topology

__all__ = ["PoolScheduling"]

log = logging.getLogger("pytest_mh_ansible")


def _worker_id(node: Any) -> str:
    return str(node.gateway.id)


class PoolScheduling:
    """An xdist scheduler (``xdist.scheduler.protocol.Scheduling``) over host pools.

    Rules, in order, when a worker has fewer than two pending tests:

    1. it gets more tests of its current topology, on the hosts it holds;
    2. else a topology with tests left for which the hosts free to it (its own and those no other
       worker holds) give an assignment; topologies with the fewest workers on them first;
    3. else tests that need no hosts;
    4. else it waits. When every worker waits and tests are left (the host sets are split
       between waiting workers), one waiting worker is shut down, which frees its hosts.

    A worker runs its last pending test only once it knows the next one (xdist's ``nextitem``),
    so the hosts of a finished unit stay busy until that test is reported complete.
    """

    def __init__(self, config: Any, run_dir: Path, hosts: Sequence[HostInfo], numnodes: int) -> None:
        self.config = config
        self.run_dir = run_dir
        self.numnodes = numnodes
        self.pools = HostPools(hosts)
        self.node2collection: dict[Any, list[str]] = {}
        self.node2pending: dict[Any, list[int]] = {}
        self.collection: list[str] | None = None
        self._topology_of: list[str | None] = []
        self._topologies: dict[str, Topology] = {}
        self._pool_of: dict[str, str | None] = {}  # unit key -> pool (fleets)
        self._queues: dict[str | None, deque[int]] = {}

    # -- xdist's Scheduling protocol -------------------------------------------------------------
    @property
    def nodes(self) -> list[Any]:
        return list(self.node2pending)

    @property
    def collection_is_completed(self) -> bool:
        return len(self.node2collection) >= self.numnodes

    @property
    def tests_finished(self) -> bool:
        if not self.collection_is_completed or self._left():
            return False
        return all(len(pending) < 2 for pending in self.node2pending.values())

    @property
    def has_pending(self) -> bool:
        return self._left() or any(self.node2pending.values())

    def add_node(self, node: Any) -> None:
        assert node not in self.node2pending
        self.node2pending[node] = []

    def add_node_collection(self, node: Any, collection: Sequence[str]) -> None:
        self.node2collection[node] = list(collection)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        self.node2pending[node].remove(item_index)
        self.pools.completed(node, item_index)
        if node.shutting_down and not self.node2pending[node]:
            self.pools.release(node)
        self._schedule_all()

    def mark_test_pending(self, item: str) -> None:
        assert self.collection is not None
        index = self.collection.index(item)
        self._queues.setdefault(self._topology_of[index], deque()).appendleft(index)
        self._schedule_all()

    def remove_pending_tests_from_node(self, node: Any, indices: Sequence[int]) -> None:
        raise NotImplementedError("the pool scheduler does not steal tests")

    def remove_node(self, node: Any) -> str | None:
        pending = self.node2pending.pop(node)
        self.pools.release(node)
        crashitem = None
        if pending:
            assert self.collection is not None
            crashitem = self.collection[pending.pop(0)]
            for index in reversed(pending):
                self._queues.setdefault(self._topology_of[index], deque()).appendleft(index)
        self._schedule_all()
        return crashitem

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is None:
            collections = list(self.node2collection.values())
            if any(other != collections[0] for other in collections[1:]):
                log.error("pool scheduler: the workers collected different tests; not scheduling")
                return
            self.collection = collections[0]
            self._load(next(iter(self.node2collection)))
        self._schedule_all()

    # -- the rules ------------------------------------------------------------------------------
    def _load(self, node: Any) -> None:
        """Read which topology each collected test needs (the worker wrote it next to its collection)."""
        assert self.collection is not None
        tests, self._topologies, self._pool_of = read_collection(self.run_dir, _worker_id(node))
        self._topology_of = [tests.get(nodeid) for nodeid in self.collection]
        for index, name in enumerate(self._topology_of):
            known = name if name in self._topologies else None
            self._topology_of[index] = known
            self._queues.setdefault(known, deque()).append(index)

    def _left(self) -> bool:
        return any(self._queues.values())

    def _schedule_all(self) -> None:
        if self.collection is None:
            return
        for node in self.nodes:
            self._schedule(node)
        if self._left() and all(not self._running(node) for node in self.nodes):
            self._break_wait()

    def _running(self, node: Any) -> bool:
        """Whether ``node`` is running tests (with one pending test, it waits for the next one)."""
        return len(self.node2pending[node]) >= 2 or (node.shutting_down and bool(self.node2pending[node]))

    def _schedule(self, node: Any) -> None:
        pending = self.node2pending[node]
        if node.shutting_down or len(pending) >= 2:
            return
        if not self._left():
            node.shutdown()
            return
        lease = self.pools.lease(node)
        current = lease.topology
        if current is not None and self._queues.get(current):
            assert lease.assignment is not None
            self._send(node, current, lease.assignment)
            return
        last = pending[-1] if pending else None
        names = [name for name, queue in self._queues.items() if name is not None and queue]
        names.sort(key=lambda name: (self.pools.holders(name), -len(self._queues[name])))
        for name in names:
            pool = self._pool_of.get(name)
            assignment = self.pools.take(node, name, self._topologies[name], pool=pool, last_index=last)
            if assignment is not None:
                self._send(node, name, assignment)
                return
        if self._queues.get(None):
            self.pools.finish(node, last)
            self._send(node, None, None)

    def _send(self, node: Any, name: str | None, assignment: Any) -> None:
        assert self.collection is not None
        queue = self._queues[name]
        sharing = max(1, self.pools.holders(name)) if name is not None else len(self.node2pending)
        count = max(2 - len(self.node2pending[node]), min(len(queue) // (2 * sharing), 16))
        indices = [queue.popleft() for _ in range(min(count, len(queue)))]
        if name is not None:
            append_placement(self.run_dir, _worker_id(node), name, assignment, [self.collection[i] for i in indices])
        self.node2pending[node].extend(indices)
        node.send_runtest_some(indices)

    def _break_wait(self) -> None:
        """Every worker waits for hosts that other waiting workers hold: shut one down to free its hosts."""
        waiting = [node for node in self.nodes if not node.shutting_down and self.node2pending[node]]
        if not waiting:
            return
        node = max(waiting, key=lambda n: len(self.pools.lease(n).hosts))
        log.info("pool scheduler: %s stops to free hosts %s", _worker_id(node), sorted(self.pools.lease(node).hosts))
        node.shutdown()
