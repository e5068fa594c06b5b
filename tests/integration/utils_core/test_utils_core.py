"""The bundled utilities on lab hosts: each change takes effect in the test and is gone after it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

SUITE = Path(__file__).with_name("utils_suite.py")


def run(pytester: pytest.Pytester, lab: Lab, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--mh-inventory={lab.inventory_path}", "-p", "no:randomly", *args
    )


def test_utils__changes_take_effect_and_are_undone(pytester: pytest.Pytester, utils_lab: Lab) -> None:
    pytester.makepyfile(test_utils=SUITE.read_text())
    result = run(pytester, utils_lab, "-v", "-rA")
    result.assert_outcomes(passed=12, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*test_05_users_then_fail*FAILED*", "*test_06_users_back*PASSED*"])
    result.stdout.fnmatch_lines(["*test_12_failing_setup*ERROR*", "*test_13_back_after_failing_setup*PASSED*"])
    assert "Sup3r-S3cret" not in result.stdout.str() + result.stderr.str()
    assert "An0ther-S3cret" not in result.stdout.str() + result.stderr.str()


def test_utils__drift_check_passes(pytester: pytest.Pytester, utils_lab: Lab) -> None:
    """The drift check (``--mh-verify-rollback``) finds nothing left behind by fs, packages, sysctl and config."""
    pytester.makepyfile(test_utils=SUITE.read_text())
    # Ansible's own remote tmp (/root/.ansible/tmp) appears with the first module call on a fresh host;
    # dpkg's status file is rewritten by an install + purge (the package set itself is still compared).
    exclude = "mh_verify_exclude=/root/.ansible*\n/var/lib/dpkg/status"
    args = ("-v", "-rA", "--mh-verify-rollback", "-o", exclude)
    result = run(pytester, utils_lab, *args, "-k", "test_01_fs or test_09 or test_11")
    result.assert_outcomes(passed=3)


def test_backup_host__raw_changes_are_restored_after_each_test(pytester: pytest.Pytester, utils_lab: Lab) -> None:
    suite = Path(__file__).with_name("backup_suite.py").read_text()
    hooks, _, tests = suite.partition("def pytest_mh_register")
    pytester.makeconftest(hooks + "def pytest_mh_register" + tests.split("\n\n\n")[0])
    pytester.makepyfile(test_backup=suite.replace("def pytest_mh_register", "def _unused_register"))
    result = run(pytester, utils_lab, "-v")
    result.assert_outcomes(passed=2)
