"""Unit tests of Topology and TopologyDomain."""

from __future__ import annotations

import pytest

from pytest_mh_ansible import Topology, TopologyDomain


def test_topology_domain__get_returns_count_or_zero() -> None:
    domain = TopologyDomain("app", client=1, server=2)
    assert domain.get("server") == 2
    assert domain.get("ldap") == 0
    assert "client" in domain
    assert "ldap" not in domain


@pytest.mark.parametrize("count", [0, -1, "1", True, 1.5])
def test_topology_domain__rejects_non_positive_or_non_integer_counts(count: object) -> None:
    with pytest.raises(ValueError, match="positive host count"):
        TopologyDomain("app", client=count)  # type: ignore[arg-type]


def test_topology__satisfied_by_more_hosts_than_required() -> None:
    have = Topology(TopologyDomain("app", client=2, server=1, web=1))
    need = Topology(TopologyDomain("app", client=1, server=1))
    assert have.satisfies(need)
    assert not need.satisfies(have)


def test_topology__not_satisfied_when_a_domain_is_missing() -> None:
    have = Topology(TopologyDomain("app", client=1))
    need = Topology(TopologyDomain("app", client=1), TopologyDomain("ad", dc=1))
    assert not have.satisfies(need)


def test_topology__equality_and_hash_follow_domains() -> None:
    a = Topology(TopologyDomain("app", client=1, server=1))
    b = Topology(TopologyDomain("app", client=1, server=1))
    assert a == b
    assert hash(a) == hash(b)
    assert a != Topology(TopologyDomain("app", client=1, server=2))


def test_topology__rejects_duplicate_domains() -> None:
    with pytest.raises(ValueError, match="appears twice"):
        Topology(TopologyDomain("app", client=1), TopologyDomain("app", server=1))


def test_topology__from_counts_and_export_round_trip() -> None:
    topology = Topology.from_counts({"app": {"client": 1, "server": 2}, "ad": {"dc": 1}})
    assert topology.export() == [
        {"id": "app", "hosts": {"client": 1, "server": 2}},
        {"id": "ad", "hosts": {"dc": 1}},
    ]
    assert topology.describe() == "app: client=1, server=2; ad: dc=1"
    with pytest.raises(KeyError):
        topology.get("nope")
