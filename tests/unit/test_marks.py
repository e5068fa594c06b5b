"""Unit tests of topology marks and their expansion from markers."""

from __future__ import annotations

from enum import unique

import pytest

from pytest_mh_ansible import (
    KnownTopologyBase,
    KnownTopologyGroupBase,
    Topology,
    TopologyController,
    TopologyDomain,
    TopologyMark,
    TopologyMarkError,
)
from pytest_mh_ansible.marks import FixturePath, expand_topology_marks

PAIR = TopologyMark(
    "pair",
    Topology(TopologyDomain("app", client=1, server=1)),
    fixtures=dict(client="app.client[0]", server="app.server[0]"),
)
TRIO = TopologyMark(
    "trio",
    Topology(TopologyDomain("app", client=1, server=2)),
    fixtures=dict(client="app.client[0]", servers="app.server"),
)


@unique
class Known(KnownTopologyBase):
    Pair = PAIR
    Trio = TRIO


class Group(KnownTopologyGroupBase):
    Any = [Known.Pair, Known.Trio]


def expand(*markers: tuple[tuple[object, ...], dict[str, object]]) -> list[str]:
    return [m.name for m in expand_topology_marks("t.py::test", list(markers), default_domain="default")]


def test_fixture_path__parses_single_and_list_forms() -> None:
    assert FixturePath.parse("app.client[0]") == FixturePath("app", "client", 0)
    assert FixturePath.parse("app.server") == FixturePath("app", "server", None)
    with pytest.raises(ValueError, match="not a fixture path"):
        FixturePath.parse("client")


def test_topology_mark__rejects_fixture_outside_the_topology() -> None:
    with pytest.raises(ValueError, match=r"has only 1 'client' host"):
        TopologyMark("x", Topology(TopologyDomain("app", client=1)), fixtures=dict(c="app.client[1]"))
    with pytest.raises(ValueError, match="role 'server'"):
        TopologyMark("x", Topology(TopologyDomain("app", client=1)), fixtures=dict(s="app.server[0]"))
    with pytest.raises(ValueError, match="domain 'ad'"):
        TopologyMark("x", Topology(TopologyDomain("app", client=1)), fixtures=dict(s="ad.dc[0]"))


def test_topology_mark__gets_a_fresh_controller_when_none_given() -> None:
    a = TopologyMark("a", Topology(TopologyDomain("app", client=1)))
    b = TopologyMark("b", Topology(TopologyDomain("app", client=1)))
    assert isinstance(a.controller, TopologyController)
    assert a.controller is not b.controller


def test_expand__accepts_every_marker_form() -> None:
    assert expand(((PAIR,), {})) == ["pair"]
    assert expand(((Known.Trio,), {})) == ["trio"]
    assert expand(((Group.Any,), {})) == ["pair", "trio"]
    assert expand((([PAIR, Known.Trio],), {})) == ["pair", "trio"]
    assert expand((("adhoc", Topology(TopologyDomain("app", client=1))), {"fixtures": {"c": "app.client[0]"}})) == [
        "adhoc"
    ]


def test_expand__stacked_marks_are_unioned_without_duplicates() -> None:
    assert expand(((PAIR,), {}), ((Group.Any,), {}), ((Known.Pair,), {})) == ["pair", "trio"]


def test_expand__shorthand_names_roles_and_counts_in_default_domain() -> None:
    (mark,) = expand_topology_marks("t.py::test", [((), {"client": 1, "server": 2})], default_domain="lab")
    assert mark.name == "client1-server2"
    assert mark.topology == Topology(TopologyDomain("lab", client=1, server=2))
    assert mark.fixtures == {"client": "lab.client[0]", "server": "lab.server"}


@pytest.mark.parametrize(
    ("markers", "message"),
    [
        ([((1,), {})], "takes a TopologyMark"),
        ([(("a", "b", "c"), {})], "invalid arguments"),
        ([(("name", "not a topology"), {})], r"takes \(name: str, topology: Topology\)"),
        ([(("name", Topology(TopologyDomain("a", x=1))), {"bogus": 1})], "unknown @pytest.mark.topology keyword"),
        ([((), {"client": "one"})], "integer counts"),
        ([(([[PAIR]],), {})], "cannot nest"),
    ],
)
def test_expand__bad_markers_name_the_test(
    markers: list[tuple[tuple[object, ...], dict[str, object]]], message: str
) -> None:
    with pytest.raises(TopologyMarkError, match=message) as info:
        expand_topology_marks("tests/t.py::test_x", markers, default_domain="default")
    assert str(info.value).startswith("tests/t.py::test_x: ")


def test_expand__two_different_topologies_with_one_name_is_an_error() -> None:
    other = TopologyMark("pair", Topology(TopologyDomain("app", client=2)))
    with pytest.raises(TopologyMarkError, match="two different topologies are named 'pair'"):
        expand(((PAIR,), {}), ((other,), {}))


def test_expand__uses_the_registered_mark_class_for_ad_hoc_marks() -> None:
    class MyMark(TopologyMark):
        pass

    (mark,) = expand_topology_marks(
        "t", [(("x", Topology(TopologyDomain("a", r=1))), {})], default_domain="d", mark_class=MyMark
    )
    assert type(mark) is MyMark
