"""Parallel runs with pytest-xdist as a user sees them: ``--dist loadgroup`` and the host pools."""

from __future__ import annotations

import re

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
