"""Host pools on real lab hosts: with -n 2 and two host sets, each worker keeps its own hosts."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest
import yaml

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

POOL_TEST = textwrap.dedent("""
    import json, os, time
    import pytest
    from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

    PAIR = TopologyMark("pair", Topology(TopologyDomain("app", client=1, server=1)),
                        fixtures=dict(client="app.client[0]", server="app.server[0]"))

    @pytest.mark.topology(PAIR)
    @pytest.mark.parametrize("n", range(8))
    def test_exclusive(mh, n):
        start = time.time()
        # mkdir is atomic on the host: it fails if another worker is inside the same host right now.
        for host in mh.hosts:
            host.conn.run("mkdir /tmp/mh-pool-inuse")
        names = [host.conn.run("hostname").stdout.strip() for host in mh.hosts]
        time.sleep(0.3)
        for host in mh.hosts:
            host.conn.run("rmdir /tmp/mh-pool-inuse")
        with open("uses.jsonl", "a") as handle:
            line = {"worker": os.environ["PYTEST_XDIST_WORKER"], "hosts": names, "start": start, "end": time.time()}
            handle.write(json.dumps(line) + "\\n")
""")


def _overlaps(uses: list[dict[str, Any]]) -> list[str]:
    found = []
    for i, a in enumerate(uses):
        for b in uses[i + 1 :]:
            shared = set(a["hosts"]) & set(b["hosts"])
            if shared and a["worker"] != b["worker"] and a["start"] < b["end"] and b["start"] < a["end"]:
                found.append(f"{sorted(shared)}: {a['worker']} and {b['worker']}")
    return found


def test_pools_lab__two_workers_run_one_topology_on_two_host_sets(pytester: pytest.Pytester, pool_lab: Lab) -> None:
    pytester.makepyfile(test_x=POOL_TEST)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-i", str(pool_lab.inventory_path), "-o", "mh_default_domain=app",
        "-p", "xdist", "-n", "2", "-p", "no:benchmark", "-v",
    )  # fmt: skip
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["*scheduling tests via PoolScheduling*"])
    uses = [json.loads(line) for line in (pytester.path / "uses.jsonl").read_text().splitlines()]
    assert _overlaps(uses) == []
    sets = {frozenset(use["hosts"]) for use in uses}
    assert sets == {frozenset({"client1", "server1"}), frozenset({"client2", "server2"})}
    for hosts in sets:
        assert len({use["worker"] for use in uses if frozenset(use["hosts"]) == hosts}) == 1
    # The two workers ran tests at the same time (on different hosts): the pools run in parallel.
    assert any(
        a["worker"] != b["worker"] and a["start"] < b["end"] and b["start"] < a["end"] for a in uses for b in uses
    )


ALL_HOSTS_TEST = textwrap.dedent("""
    import pytest
    from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

    ALL = TopologyMark("all", Topology(TopologyDomain("app", client=2, server=2)),
                       fixtures=dict(clients="app.client", servers="app.server"))

    @pytest.mark.topology(ALL)
    def test_all_connected(mh):
        assert sorted(h.conn.run("hostname").stdout.strip() for h in mh.hosts) == [
            "client1", "client2", "server1", "server2"]
""")


def test_pools_lab__a_topologys_hosts_connect_in_parallel_over_ssh(pytester: pytest.Pytester, pool_lab: Lab) -> None:
    # The four ssh connections open in four threads at session start (session/connect.py).
    pytester.makepyfile(test_all=ALL_HOSTS_TEST)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-i", str(pool_lab.inventory_path), "-o", "mh_default_domain=app",
        "-p", "no:xdist", "-p", "no:benchmark",
    )  # fmt: skip
    result.assert_outcomes(passed=1)


FLEET_TEST = textwrap.dedent("""
    import pytest
    from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

    PAIR = TopologyMark("pair", Topology(TopologyDomain("app", client=1, server=1)),
                        fixtures=dict(client="app.client[0]", server="app.server[0]"))

    @pytest.mark.topology(PAIR)
    @pytest.mark.parametrize("n", range(3))
    def test_fleet(client, server, mh_pool, n):
        suffix = {"p1": "1", "p2": "2"}[mh_pool]
        assert client.host.conn.run("hostname").stdout.strip() == "client" + suffix
        assert server.host.conn.run("hostname").stdout.strip() == "server" + suffix
""")


def test_pools_lab__a_fleet_runs_each_test_on_each_pools_hosts(pytester: pytest.Pytester, pool_lab: Lab) -> None:
    data = yaml.safe_load(pool_lab.inventory_path.read_text())
    hosts = {name: dict(values) for name, values in data["all"]["hosts"].items()}
    for name, values in hosts.items():
        values["mh_pool"] = "p1" if name.endswith("1") else "p2"
    inventory = {
        "all": {
            "vars": {"mh_domain": "app"},
            "children": {
                "client": {"hosts": {n: hosts[n] for n in ("client1", "client2")}},
                "server": {"hosts": {n: hosts[n] for n in ("server1", "server2")}},
            },
        }
    }
    (pytester.path / "fleet.yml").write_text(yaml.safe_dump(inventory))
    pytester.makepyfile(test_fleet=FLEET_TEST)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-i", "fleet.yml", "-p", "xdist", "-n", "2", "-p", "no:benchmark", "-v",
    )  # fmt: skip
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*PASSED test_fleet.py::test_fleet[[]pair-p1-0[]]*"])
    result.stdout.fnmatch_lines(["*PASSED test_fleet.py::test_fleet[[]pair-p2-0[]]*"])
