"""Error messages as a user reads them: each names what the user wrote, and is printed once."""

from __future__ import annotations

import pytest

LOCAL = "ansible_connection=local ansible_python_interpreter=/usr/bin/python3"


@pytest.fixture
def one_host(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".ini", hosts=f"[client]\nclient1 {LOCAL}\n")
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    return pytester


def test_messages__failed_snapshot_is_reported_as_the_users_module(one_host: pytest.Pytester) -> None:
    one_host.makepyfile(
        test_copy="""
        import pytest

        @pytest.mark.topology(client=1)
        def test_copy(client):
            client.host.ansible.run("ansible.builtin.copy", dest="relative/app.conf", content="x")
        """
    )
    result = one_host.runpytest_subprocess("-i", "hosts.ini")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E * client1: module ansible.builtin.copy failed: not run: its change could not be saved for rollback "
            "first (path 'relative/app.conf' is not absolute)*args: {'dest': 'relative/app.conf'*"
        ]
    )
    out = result.stdout.str()
    assert "E       pytest_mh_ansible.errors.ModuleError: client1: module mh_ansible.rollback.snapshot" not in out
    assert "During handling" not in out


def test_messages__unknown_topology_name_is_a_usage_error_listing_the_known(one_host: pytest.Pytester) -> None:
    one_host.makepyfile(
        test_t="""
        import pytest

        @pytest.mark.topology(client=1)
        def test_a(client):
            pass
        """
    )
    result = one_host.runpytest_subprocess("-i", "hosts.ini", "--mh-topology", "client")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --mh-topology 'client': no collected test has this topology (known: client1)"])
    result = one_host.runpytest_subprocess("-i", "hosts.ini", "--mh-topology", "client1")
    result.assert_outcomes(passed=1)


def test_messages__malformed_topology_marker_is_printed_once(one_host: pytest.Pytester) -> None:
    one_host.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.topology("just-a-name", "and-junk", "more")
        def test_x(mh):
            pass
        """
    )
    result = one_host.runpytest_subprocess("-i", "hosts.ini")
    out = result.stdout.str()
    # once in the report; the short summary repeats it (cut to the terminal's width), so it is left out
    report = [line for line in result.stdout.lines if not line.startswith("ERROR ")]
    message = "test_bad.py::test_x: invalid arguments for @pytest.mark.topology: args="
    assert sum(message in line for line in report) == 1
    assert "During handling" not in out


def test_messages__skip_reason_names_the_limit(pytester: pytest.Pytester) -> None:
    pytester.makefile(".ini", hosts=f"[client]\nclient1 {LOCAL}\n\n[server]\nserver1 {LOCAL}\n")
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    pytester.makepyfile(
        test_l="""
        import pytest

        @pytest.mark.topology(client=1, server=1)
        def test_pair(client, server):
            pass
        """
    )
    result = pytester.runpytest_subprocess("-i", "hosts.ini", "--mh-limit", "client*", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED * needs 1 host with role 'server'* (with --mh-limit 'client*': only the hosts it matches are used)"]
    )


UNREACHABLE = f"""\
[client]
client1 {LOCAL}

[server]
server1 ansible_host=127.0.0.1 ansible_port=9 ansible_user=root
"""


def test_messages__never_answered_host_and_its_skips_point_at_the_tests(pytester: pytest.Pytester) -> None:
    pytester.makefile(".ini", hosts=UNREACHABLE)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    pytester.makepyfile(
        test_u="""
        import pytest

        @pytest.mark.topology(server=1)
        def test_first(server):
            server.host.conn.run("true")

        @pytest.mark.topology(server=1)
        def test_second(server):
            pass

        @pytest.mark.topology(server=1)
        def test_third(server):
            pass
        """
    )
    result = pytester.runpytest_subprocess("-i", "hosts.ini", "--mh-unreachable=skip", "-rs")
    out = result.stdout.str()
    assert "stopped answering" not in out
    result.stdout.fnmatch_lines(
        ["SKIPPED [[]*] test_u.py:*: host 'server1' is unreachable: it did not answer earlier in this session*"]
    )
    assert "reporting.py" not in out
