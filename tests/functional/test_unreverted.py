"""Changes without an inverse (mh_unreverted), and rollback failures after a failing setup, as users see them."""

from __future__ import annotations

import textwrap

import pytest

SUITE = """
import pytest
from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

SERVER = TopologyMark("server", Topology(TopologyDomain("app", server=1)), fixtures=dict(server="app.server[0]"))

@pytest.mark.topology(SERVER)
def test_raw_command(server):
    server.host.ansible.run("ansible.builtin.command", cmd="true")

@pytest.mark.topology(SERVER)
@pytest.mark.mh_unreverted("warn")
def test_marked_warn(server):
    server.host.ansible.run("ansible.builtin.command", cmd="true")

@pytest.mark.topology(SERVER)
@pytest.mark.mh_unreverted("fail")
def test_marked_fail(server):
    server.host.ansible.run("ansible.builtin.command", cmd="true")

@pytest.mark.topology(SERVER)
def test_nothing_unreverted(server):
    server.host.ansible.run("ansible.builtin.command", cmd="true", check=True)
"""

SUMMARY = "*pytest-mh-ansible: changes not reverted (no known inverse)*"


def _run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    project.makepyfile(test_unrev=SUITE)
    return project.runpytest_subprocess("-i", "hosts.ini", "-p", "no:randomly", *args)


def test_unreverted__warn_by_default__listed_in_the_terminal_summary(project: pytest.Pytester) -> None:
    result = _run(project)
    result.assert_outcomes(passed=4, errors=1)  # a teardown error counts besides the pass
    result.stdout.fnmatch_lines(
        [
            SUMMARY,
            "test_unrev.py::test_raw_command?server?: ?server1? not reverted: ansible.builtin.command changed the "
            "host and has no known inverse*",
            "test_unrev.py::test_marked_warn?server?: ?server1? not reverted: ansible.builtin.command*",
        ]
    )
    assert "test_unrev.py::test_nothing_unreverted[server]: [" not in result.stdout.str()
    result.stdout.fnmatch_lines(["ERROR test_unrev.py::test_marked_fail[[]server[]]*"])


def test_unreverted__fail_in_the_ini__test_errors_at_teardown_naming_the_change(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\naddopts = -p no:cacheprovider\nmh_unreverted = fail\n")
    result = _run(project)
    result.assert_outcomes(passed=4, errors=2)  # the marked "warn" test has no error
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_raw_command[[]server[]]*",
            "*test_unrev.py::test_raw_command[[]server[]]: 1 change(s) without an inverse (mh_unreverted = fail):",
            "*[[]server1[]] not reverted: ansible.builtin.command changed the host and has no known inverse*",
        ]
    )


def test_unreverted__bad_ini_value__usage_error(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\naddopts = -p no:cacheprovider\nmh_unreverted = maybe\n")
    result = _run(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini option mh_unreverted: 'maybe' is not 'warn' or 'fail'*"])


SETUP = """
import pytest
from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

SERVER = TopologyMark("server", Topology(TopologyDomain("app", server=1)), fixtures=dict(server="app.server[0]"))

@pytest.fixture
def broken_setup(server):
    def cannot():
        raise RuntimeError("cannot undo")
    server.host.journal.record(server.host, "my change", cannot)
    raise ValueError("setup breaks")

@pytest.mark.topology(SERVER)
def test_a(server, broken_setup):
    pass
"""


def test_rollback_after_a_failed_setup__its_failure_is_an_error_of_that_test(project: pytest.Pytester) -> None:
    """A user fixture fails after a change: the setup error, then the rollback's as the same test's teardown error."""
    project.makepyfile(test_setup=SETUP)
    result = project.runpytest_subprocess("-i", "hosts.ini", "-p", "no:randomly", "-rA")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        ["ERROR test_setup.py::test_a?server? - ValueError*", "ERROR test_setup.py::test_a?server? - *"]
    )
    output = result.stdout.str()
    assert "RollbackError: server1: could not revert my change: RuntimeError: cannot undo" in output, output
    # logged once (not once per capture handler)
    assert output.count("[server1] could not revert my change") == 1, output


ROLE_SETUP = """
import pytest
from pytest_mh_ansible import MultihostRole, Topology, TopologyDomain, TopologyMark

SERVER = TopologyMark("server", Topology(TopologyDomain("app", server=1)), fixtures=dict(server="app.server[0]"))
"""

ROLE_CONFTEST = """
from pytest_mh_ansible import MultihostRole

class BrokenRole(MultihostRole):
    def setup(self):
        def cannot():
            raise RuntimeError("cannot undo")
        self.host.journal.record(self.host, "role change", cannot)
        raise ValueError("role setup breaks")

def pytest_mh_register(registry):
    registry.role("server", BrokenRole)
"""


def test_rollback_after_a_failed_role_setup__reported_with_the_setup_error(project: pytest.Pytester) -> None:
    project.makeconftest(ROLE_CONFTEST)
    project.makepyfile(
        test_role=ROLE_SETUP
        + textwrap.dedent("""
        @pytest.mark.topology(SERVER)
        def test_a(server):
            pass
        """)
    )
    result = project.runpytest_subprocess("-i", "hosts.ini", "-p", "no:randomly")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_role.py::test_a[[]server[]]: setup failed (ValueError: role setup breaks), and its rollback too*",
            "*RollbackError: server1: could not revert role change: RuntimeError: cannot undo*",
        ]
    )
