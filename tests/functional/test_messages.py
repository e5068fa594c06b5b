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
