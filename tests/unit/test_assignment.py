"""Unit tests of how hosts fill a topology's slots."""

from __future__ import annotations

from pytest_mh_ansible import Topology, TopologyDomain
from pytest_mh_ansible._private.session.assignment import Assignment, HostInfo, assign


def hosts(*specs: str, domain: str = "app") -> list[HostInfo]:
    result = []
    for spec in specs:
        name, _, roles = spec.partition(":")
        result.append(HostInfo(name, tuple(roles.split(",")), domain))
    return result


def test_assign__takes_hosts_in_inventory_order() -> None:
    result = assign("t", Topology(TopologyDomain("app", server=2)), hosts("s1:server", "s2:server", "s3:server"))
    assert isinstance(result, Assignment)
    assert result.slots == {("app", "server"): ("s1", "s2")}


def test_assign__a_host_fills_one_slot_at_a_time() -> None:
    # Greedy would give a to server and leave web empty; the matching finds b for server.
    result = assign("t", Topology(TopologyDomain("app", server=1, web=1)), hosts("a:server,web", "b:server"))
    assert isinstance(result, Assignment)
    assert result.slots == {("app", "server"): ("b",), ("app", "web"): ("a",)}


def test_assign__is_deterministic() -> None:
    inventory = hosts("a:server,web", "b:server,web", "c:web")
    topology = Topology(TopologyDomain("app", server=1, web=2))
    results = {repr(assign("t", topology, inventory)) for _ in range(5)}
    assert len(results) == 1


def test_assign__reason_names_the_missing_role_and_the_groups() -> None:
    reason = assign("pair", Topology(TopologyDomain("app", client=1, server=1)), hosts("c1:client", "w1:web"))
    assert reason == (
        "topology 'pair' needs 1 host with role 'server' in domain 'app'; the inventory has none (groups: client, web)"
    )


def test_assign__reason_counts_hosts_when_too_few() -> None:
    reason = assign("big", Topology(TopologyDomain("app", server=3)), hosts("s1:server", "s2:server"))
    assert reason == "topology 'big' needs 3 hosts with role 'server' in domain 'app'; the inventory has 2 (s1, s2)"


def test_assign__reason_names_the_missing_domain() -> None:
    reason = assign("ad", Topology(TopologyDomain("ad", dc=1)), hosts("c1:client"))
    assert reason == (
        "topology 'ad' needs 1 host with role 'dc' in domain 'ad'; "
        "the inventory has no host in domain 'ad' (domains: app)"
    )


def test_assign__reason_when_hosts_would_fill_two_slots() -> None:
    reason = assign("t", Topology(TopologyDomain("app", server=1, web=1)), hosts("a:server,web"))
    assert isinstance(reason, str)
    assert "a host fills one slot at a time" in reason
    assert "a (server, web)" in reason


def test_assign__multiple_domains() -> None:
    inventory = hosts("c1:client") + hosts("dc1:dc", domain="ad")
    result = assign("t", Topology(TopologyDomain("app", client=1), TopologyDomain("ad", dc=1)), inventory)
    assert isinstance(result, Assignment)
    assert result.hosts == ("c1", "dc1")
