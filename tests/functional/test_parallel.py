"""Parallel runs with pytest-xdist as a user sees them: ``--dist loadgroup`` and the host pools."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

TOPOLOGIES = """
import os
import pytest
from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

A = TopologyMark("a", Topology(TopologyDomain("app", client=1)), fixtures=dict(client="app.client[0]"))
B = TopologyMark("b", Topology(TopologyDomain("app", server=1)), fixtures=dict(server="app.server[0]"))
"""


def _worker_of(lines: list[str]) -> dict[str, str]:
    """``{node id: worker}`` from the ``-v`` lines of an xdist run (``[gw0] PASSED test_x.py::test_a[a]@mh-a``)."""
    found: dict[str, str] = {}
    for line in lines:
        match = re.match(r"\[(gw\d+)\].* (PASSED|FAILED|ERROR|SKIPPED) (\S+)", line)
        if match:
            found[match.group(3)] = match.group(1)
    return found


def test_parallel__loadgroup_keeps_a_topology_on_one_worker(project: pytest.Pytester) -> None:
    tests = "".join(
        f"\n@pytest.mark.topology({mark})\ndef test_{mark.lower()}{n}(mh):\n    pass\n"
        for mark in ("A", "B")
        for n in range(6)
    )
    project.makepyfile(test_groups=TOPOLOGIES + tests)
    result = project.runpytest_subprocess("-i", "hosts.ini", "-p", "xdist", "-n", "2", "--dist", "loadgroup", "-v")
    result.assert_outcomes(passed=12)
    workers = _worker_of(result.stdout.lines)
    assert len(workers) == 12, result.stdout.str()
    # xdist turned the topology's group mark into a node-id suffix ...
    assert all(nodeid.endswith(("[a]@mh-a", "[b]@mh-b")) for nodeid in workers), sorted(workers)
    # ... and kept each group on one worker.
    for topology in ("a", "b"):
        used = {worker for nodeid, worker in workers.items() if nodeid.endswith(f"@mh-{topology}")}
        assert len(used) == 1, (topology, used)


def test_parallel__without_xdist_node_ids_have_no_group_suffix(project: pytest.Pytester) -> None:
    project.makepyfile(test_plain=TOPOLOGIES + "\n@pytest.mark.topology(A)\ndef test_a(mh):\n    pass\n")
    result = project.runpytest_subprocess("-i", "hosts.ini", "-p", "no:xdist", "--collect-only", "-q")
    assert "test_plain.py::test_a[a]" in result.stdout.lines


POOL_TESTS = """
import json, os, time
import pytest
from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

PAIR = TopologyMark("pair", Topology(TopologyDomain("app", client=1, server=1)),
                    fixtures=dict(client="app.client[0]", server="app.server[0]"))
BIG = TopologyMark("big", Topology(TopologyDomain("app", client=1, server=3)), fixtures=dict(client="app.client[0]"))

def _record(mh):
    start = time.time()
    time.sleep(0.1)
    with open("uses.jsonl", "a") as handle:
        line = {"worker": os.environ["PYTEST_XDIST_WORKER"], "hosts": [h.name for h in mh.hosts],
                "start": start, "end": time.time()}
        handle.write(json.dumps(line) + "\\n")

@pytest.mark.topology(PAIR)
@pytest.mark.parametrize("n", range(12))
def test_pair(mh, n):
    _record(mh)

@pytest.mark.topology(BIG)
@pytest.mark.parametrize("n", range(2))
def test_big(mh, n):
    _record(mh)

def test_plain():
    pass
"""


def _three_sets(project: pytest.Pytester) -> None:
    local = "ansible_connection=local ansible_python_interpreter=/usr/bin/python3"
    hosts = ["[client]", *(f"client{i} {local}" for i in (1, 2, 3)), "[server]"]
    hosts += [f"server{i} {local}" for i in (1, 2, 3)]
    project.makefile(".ini", pools="\n".join([*hosts, "[all:vars]", "mh_domain=app", ""]))


def _overlaps(uses: list[dict[str, Any]]) -> list[str]:
    """Pairs of uses of one host by two workers at once."""
    found = []
    for i, a in enumerate(uses):
        for b in uses[i + 1 :]:
            shared = set(a["hosts"]) & set(b["hosts"])
            if shared and a["worker"] != b["worker"] and a["start"] < b["end"] and b["start"] < a["end"]:
                found.append(f"{sorted(shared)}: {a['worker']} and {b['worker']}")
    return found


def test_parallel__pools_give_each_worker_its_own_hosts(project: pytest.Pytester) -> None:
    _three_sets(project)
    project.makepyfile(test_pools=POOL_TESTS)
    result = project.runpytest_subprocess("-i", "pools.ini", "-p", "xdist", "-n", "3", "-v")
    result.assert_outcomes(passed=15)
    result.stdout.fnmatch_lines(["*scheduling tests via PoolScheduling*"])
    uses = [json.loads(line) for line in (project.path / "uses.jsonl").read_text().splitlines()]
    assert len(uses) == 14
    assert _overlaps(uses) == []
    pair_sets = {frozenset(use["hosts"]) for use in uses if len(use["hosts"]) == 2}
    # Three host sets for "pair", each kept by one worker.
    assert len(pair_sets) == 3
    for hosts in pair_sets:
        assert len({use["worker"] for use in uses if frozenset(use["hosts"]) == hosts}) == 1
    # "big" needs every server: it ran once the other workers gave theirs back.
    assert any(len(use["hosts"]) == 4 for use in uses)


def test_parallel__no_pools_keeps_xdist_load_scheduling(project: pytest.Pytester) -> None:
    project.makepyfile(test_plain=TOPOLOGIES + "\n@pytest.mark.topology(A)\ndef test_a(mh):\n    pass\n")
    result = project.runpytest_subprocess("-i", "hosts.ini", "-p", "xdist", "-n", "2", "--mh-no-pools", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*scheduling tests via LoadScheduling*"])


FLEET_TESTS = """
import json, os
import pytest
from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

PAIR = TopologyMark("pair", Topology(TopologyDomain("app", client=1, server=1)),
                    fixtures=dict(client="app.client[0]", server="app.server[0]"))
TRIO = TopologyMark("trio", Topology(TopologyDomain("app", client=1, server=2)), fixtures=dict(client="app.client[0]"))

@pytest.mark.topology([PAIR, TRIO])
@pytest.mark.parametrize("n", range(2))
def test_x(mh, mh_pool, n):
    assert {h.vars["mh_pool"] for h in mh.hosts} == {mh_pool}
    with open("uses.jsonl", "a") as handle:
        line = {"worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "pool": mh_pool,
                "hosts": sorted(h.name for h in mh.hosts)}
        handle.write(json.dumps(line) + "\\n")
"""


def _fleet(project: pytest.Pytester) -> None:
    local = "ansible_connection=local ansible_python_interpreter=/usr/bin/python3"
    lines = ["[client]", f"deb-client mh_pool=debian12 {local}", f"alma-client mh_pool=alma9 {local}", "[server]"]
    lines += [f"deb-server mh_pool=debian12 {local}", f"alma-server1 mh_pool=alma9 {local}"]
    lines += [f"alma-server2 mh_pool=alma9 {local}", "[all:vars]", "mh_domain=app", ""]
    project.makefile(".ini", fleet="\n".join(lines))


def test_parallel__a_fleet_runs_each_test_once_per_pool(project: pytest.Pytester) -> None:
    _fleet(project)
    project.makepyfile(test_fleet=FLEET_TESTS)
    result = project.runpytest_subprocess("-i", "fleet.ini", "-p", "no:xdist", "-v", "-rs")
    # trio needs two servers: pool debian12 has one, so its trio tests are skipped with the reason.
    result.assert_outcomes(passed=6, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*test_fleet.py::test_x[[]pair-alma9-0[]] PASSED*",
            "*test_fleet.py::test_x[[]pair-debian12-0[]] PASSED*",
            "*SKIPPED*pool 'debian12': topology 'trio' needs 2 hosts with role 'server'*",
        ]
    )


def test_parallel__the_pools_of_a_fleet_run_side_by_side_with_xdist(project: pytest.Pytester) -> None:
    _fleet(project)
    project.makepyfile(test_fleet=FLEET_TESTS)
    result = project.runpytest_subprocess("-i", "fleet.ini", "-p", "xdist", "-n", "2")
    result.assert_outcomes(passed=6, skipped=2)
    uses = [json.loads(line) for line in (project.path / "uses.jsonl").read_text().splitlines()]
    assert {use["pool"] for use in uses} == {"debian12", "alma9"}
    assert len({use["worker"] for use in uses}) == 2
