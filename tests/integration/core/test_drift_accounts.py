"""The drift check on lab hosts: a raw useradd shows in every account file, passwd included."""

from __future__ import annotations

import subprocess

import pytest

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

TEST = """
import pytest

@pytest.mark.topology(server=1)
def test_raw_useradd(server):
    server.host.conn.run("useradd -m mhdrift")
"""

ACCOUNT_FILES = ("passwd", "group", "shadow", "gshadow", "subuid", "subgid")


@pytest.mark.parametrize("paths", ["", "mh_verify_paths =\n    /home\n"], ids=["default-paths", "home-only"])
def test_drift_accounts__raw_useradd_changes_every_account_file(
    pytester: pytest.Pytester, core_lab: Lab, paths: str
) -> None:
    pytester.makeini(f"[pytest]\n{paths}")
    pytester.makepyfile(test_users=TEST)
    try:
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", f"--mh-inventory={core_lab.inventory_path}", "--mh-verify-rollback"
        )
    finally:
        host = next(h.name for h in core_lab.hosts if "server" in h.roles)
        subprocess.run(
            ["ssh", "-F", str(core_lab.ssh_config_path), host, "userdel -r mhdrift 2>/dev/null; true"], check=True
        )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*drift not rolled back*"])
    output = result.stdout.str()
    for name in ACCOUNT_FILES:
        assert f": /etc/{name}: content changed" in output, name
    assert ": user mhdrift: created" in output
