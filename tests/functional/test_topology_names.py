"""Topology names across tests, and a project's own mark class, with and without an inventory."""

from __future__ import annotations

import pytest

LOCAL = "ansible_connection=local ansible_python_interpreter=/usr/bin/python3"

TWO_SHAPES = """
import pytest
from pytest_mh_ansible import Topology, TopologyDomain

@pytest.mark.topology("app", Topology(TopologyDomain("default", client=1)), fixtures=dict(client="default.client[0]"))
def test_one(client):
    pass

@pytest.mark.topology("app", Topology(TopologyDomain("default", client=2)), fixtures=dict(clients="default.client"))
def test_two(clients):
    pass

@pytest.mark.topology("app", Topology(TopologyDomain("default", client=1)), fixtures=dict(c="default.client[0]"))
def test_same_shape(c):
    pass
"""


def test_topology_names__one_name_two_shapes_is_a_collection_error_naming_both_tests(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".ini", hosts=f"[client]\nclient1 {LOCAL}\nclient2 {LOCAL}\n")
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    pytester.makepyfile(test_shapes=TWO_SHAPES)
    result = pytester.runpytest_subprocess("-i", "hosts.ini")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "test_shapes.py::test_two: topology 'app' (*client*2*) has the name of a different topology in "
            "test_shapes.py::test_one (*client*1*); give one of them another name"
        ]
    )
    # test_same_shape is fine: one report (the short summary repeats it, cut to the terminal's width)
    report = [line for line in result.stdout.lines if not line.startswith("ERROR ")]
    assert sum("has the name of a different topology" in line for line in report) == 1


CONFTEST = """
from pytest_mh_ansible import TopologyMark

class TicketMark(TopologyMark):
    @classmethod
    def from_args(cls, nodeid, args, kwargs):
        kwargs = dict(kwargs)
        kwargs.pop("ticket", None)
        return super().from_args(nodeid, args, kwargs)

def pytest_mh_register(registry):
    registry.topology_mark(TicketMark)
"""

TICKET = """
import pytest
from pytest_mh_ansible import Topology, TopologyDomain

SOLO = Topology(TopologyDomain("default", client=1))

@pytest.mark.topology("solo", SOLO, fixtures=dict(client="default.client[0]"), ticket="T-1")
def test_a(client):
    assert type(client.host.name) is str

def test_plain():
    pass
"""


def test_topology_names__project_mark_class_without_an_inventory_stays_inert(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    pytester.makepyfile(test_ticket=TICKET)
    result = pytester.runpytest_subprocess("-v", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*test_a[[]solo[]] SKIPPED*", "SKIPPED * no Ansible inventory given*"])
    pytester.makefile(".ini", hosts=f"[client]\nclient1 {LOCAL}\n")
    result = pytester.runpytest_subprocess("-i", "hosts.ini", "-v")
    result.assert_outcomes(passed=2)
