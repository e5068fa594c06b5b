"""The pool bookkeeping and the pool scheduler, with fake xdist nodes: disjoint hosts, affinity, no deadlock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_mh_ansible import Topology, TopologyDomain
from pytest_mh_ansible._private.parallel.pools import HostPools, disjoint
from pytest_mh_ansible._private.parallel.scheduler import PoolScheduling
from pytest_mh_ansible._private.parallel.worker import Placements, write_collection
from pytest_mh_ansible._private.session.assignment import HostInfo

PAIR = Topology(TopologyDomain("app", client=1, server=1))
BIG = Topology(TopologyDomain("app", client=1, server=3))


def _hosts(sets: int) -> list[HostInfo]:
    return [HostInfo(f"client{i}", ("client",), "app") for i in range(1, sets + 1)] + [
        HostInfo(f"server{i}", ("server",), "app") for i in range(1, sets + 1)
    ]


def test_pools__two_workers_get_disjoint_sets_and_a_third_gets_none() -> None:
    pools = HostPools(_hosts(2))
    first = pools.take("gw0", "pair", PAIR)
    second = pools.take("gw1", "pair", PAIR)
    assert first is not None
    assert second is not None
    assert set(first.hosts).isdisjoint(second.hosts)
    assert pools.take("gw2", "pair", PAIR) is None
    assert disjoint(pools.held().values())


def test_pools__hosts_of_a_finished_unit_stay_busy_until_its_last_test_completes() -> None:
    pools = HostPools(_hosts(1))
    assert pools.take("gw0", "pair", PAIR) is not None
    pools.finish("gw0", last_index=7)
    assert pools.take("gw1", "pair", PAIR) is None
    assert pools.completed("gw0", 7)
    assert pools.take("gw1", "pair", PAIR) is not None


def test_pools__a_worker_keeps_the_hosts_it_already_set_up() -> None:
    pools = HostPools(_hosts(3))
    mine = pools.take("gw1", "pair", PAIR)
    assert mine is not None
    pools.finish("gw1", None)
    again = pools.take("gw1", "pair", PAIR)
    assert again == mine


def test_pools__a_worker_may_reuse_its_own_hosts_for_a_bigger_topology() -> None:
    pools = HostPools(_hosts(3))
    pair = pools.take("gw0", "pair", PAIR)
    assert pair is not None
    big = pools.take("gw0", "big", BIG, last_index=3)
    assert big is not None
    assert set(pair.hosts) <= set(big.hosts) | {"client1"}


class FakeNode:
    """What the scheduler uses of xdist's WorkerController."""

    def __init__(self, name: str) -> None:
        self.gateway = type("Gateway", (), {"id": name})()
        self.shutting_down = False
        self.sent: list[list[int]] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.append(list(indices))

    def shutdown(self) -> None:
        self.shutting_down = True


def _scheduler(
    tmp_path: Path, sets: int, tests: dict[str, str | None], workers: int
) -> tuple[PoolScheduling, list[Any]]:
    write_collection(tmp_path, "gw0", tests, {"pair": PAIR, "big": BIG})
    sched = PoolScheduling(None, tmp_path, _hosts(sets), workers)
    nodes = [FakeNode(f"gw{i}") for i in range(workers)]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, list(tests))
    sched.schedule()
    return sched, nodes


def _run_to_end(sched: PoolScheduling, nodes: list[Any], tmp_path: Path) -> dict[str, set[str]]:
    """Play xdist's workers: run pending tests (a worker runs its last one only at shutdown or with a next one).

    Checks at every step that the hosts of the tests being run are disjoint between workers,
    and returns the hosts each test ran on.
    """
    assert sched.collection is not None
    ran: dict[str, set[str]] = {}
    readers = {node: Placements(tmp_path, node.gateway.id) for node in nodes}
    for _ in range(1000):
        if sched.tests_finished and not any(sched.node2pending.get(n) for n in nodes if n.shutting_down):
            break
        progressed = False
        for node in list(sched.nodes):
            pending = sched.node2pending[node]
            if len(pending) >= 2 or (pending and node.shutting_down):
                index = pending[0]
                nodeid = sched.collection[index]
                name = sched._topology_of[index]
                if name is not None:
                    assignment = readers[node].get(nodeid, name)
                    assert assignment is not None, nodeid
                    ran[nodeid] = set(assignment.hosts)
                assert disjoint(sched.pools.held().values())
                sched.mark_test_complete(node, index)
                progressed = True
            elif node.shutting_down and not pending:
                sched.remove_node(node)
                progressed = True
        if not progressed and sched.tests_finished:
            for node in sched.nodes:
                node.shutdown()
    return ran


def test_scheduler__three_sets_run_one_topology_on_three_workers(tmp_path: Path) -> None:
    tests: dict[str, str | None] = {f"t.py::test_{n}[pair]": "pair" for n in range(30)}
    sched, nodes = _scheduler(tmp_path, 3, tests, 3)
    assert all(node.sent for node in nodes)
    ran = _run_to_end(sched, nodes, tmp_path)
    assert len(ran) == 30
    assert len({frozenset(hosts) for hosts in ran.values()}) == 3


def test_scheduler__fewer_sets_than_workers_and_a_topology_of_all_hosts_never_deadlock(tmp_path: Path) -> None:
    tests: dict[str, str | None] = {f"t.py::test_{n}[pair]": "pair" for n in range(12)}
    tests.update({f"t.py::test_{n}[big]": "big" for n in range(4)})
    tests.update({f"t.py::test_plain_{n}": None for n in range(3)})
    sched, nodes = _scheduler(tmp_path, 3, tests, 4)
    ran = _run_to_end(sched, nodes, tmp_path)
    assert len(ran) == 16
    assert not sched.has_pending
