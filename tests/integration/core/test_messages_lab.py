"""Error messages on lab hosts: they name the user's module and the --mh-limit, once."""

from __future__ import annotations

import pytest

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

TESTS = """
import pytest

@pytest.mark.topology(server=1)
def test_copy_relative_dest(server):
    server.host.ansible.run("ansible.builtin.copy", dest="relative/app.conf", content="x")

@pytest.mark.topology(server=1)
def test_copy_missing_dir(server):
    server.host.ansible.run("ansible.builtin.copy", dest="/nonexistent-mh/app.conf", content="x")

@pytest.mark.topology(client=1, server=1)
def test_pair(client, server):
    pass
"""


def test_messages_lab__users_module_and_limit_named(pytester: pytest.Pytester, core_lab: Lab) -> None:
    pytester.makepyfile(test_m=TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--mh-inventory={core_lab.inventory_path}", "--mh-limit", "server*", "-rs"
    )
    result.assert_outcomes(failed=2, skipped=1)
    out = result.stdout.str()
    assert "module mh_ansible.rollback.snapshot failed" not in out
    assert "During handling" not in out
    result.stdout.fnmatch_lines(
        [
            "*server1: module ansible.builtin.copy failed: not run: its change could not be saved for rollback first "
            "(path 'relative/app.conf' is not absolute)*",
            "*server1: module ansible.builtin.copy failed: Destination directory /nonexistent-mh does not exist*",
        ]
    )
    result.stdout.fnmatch_lines(["SKIPPED * needs 1 host with role 'client'* (with --mh-limit 'server*': *)"])
