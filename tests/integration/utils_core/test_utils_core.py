"""The bundled utilities on lab hosts: each change takes effect in the test and is gone after it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_mh_ansible.lab import Lab
from pytest_mh_ansible.utils.crashes import core_locations

pytestmark = pytest.mark.integration

SUITE = Path(__file__).with_name("utils_suite.py")
SNAPSHOTS = "/var/lib/mh-ansible/snapshots"


def run(pytester: pytest.Pytester, lab: Lab, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--mh-inventory={lab.inventory_path}", "-p", "no:randomly", *args
    )


def ssh(lab: Lab, host: str, command: str) -> str:
    """Run a command on a lab host as root through the lab's ssh_config (from outside the inner run)."""
    proc = subprocess.run(
        ["ssh", "-F", str(lab.ssh_config_path), host, command],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 0, f"{host}: {command!r} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def exists(lab: Lab, host: str, *paths: str) -> list[bool]:
    out = ssh(lab, host, "; ".join(f"test -e {path} && echo yes || echo no" for path in paths))
    return [word == "yes" for word in out.split()]


def make_backup_suite(pytester: pytest.Pytester, name: str) -> None:
    """Its hooks and host class (up to pytest_mh_register) go to conftest.py, its tests to test_backup.py."""
    suite = Path(__file__).with_name(name).read_text()
    hooks, _, tests = suite.partition("def pytest_mh_register")
    pytester.makeconftest(hooks + "def pytest_mh_register" + tests.split("\n\n\n")[0])
    pytester.makepyfile(test_backup=suite.replace("def pytest_mh_register", "def _unused_register"))


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
    """The session snapshot exists during the run (test_3) and pytest_teardown removes it at the end."""
    snapshot = f"{SNAPSHOTS}/mh-host-backup"
    assert exists(utils_lab, "server1", snapshot) == [False]
    make_backup_suite(pytester, "backup_suite.py")
    result = run(pytester, utils_lab, "-v")
    result.assert_outcomes(passed=3)
    assert exists(utils_lab, "server1", snapshot, "/etc/mh-raw") == [False, False]


def test_backup_controller__restores_the_prepared_state_and_drops_its_snapshot(
    pytester: pytest.Pytester, utils_lab: Lab
) -> None:
    """Raw changes of test 1 are undone to the topology snapshot, which holds topology_setup's file."""
    paths = (f"{SNAPSHOTS}/mh-topology-backup-prepared", f"{SNAPSHOTS}/mh-host-backup", "/etc/mh-prepared")
    assert exists(utils_lab, "server1", *paths) == [False, False, False]
    make_backup_suite(pytester, "backup_controller_suite.py")
    result = run(pytester, utils_lab, "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_1_raw_changes*PASSED*", "*test_2_restored_to_the_topology_snapshot*PASSED*"])
    # topology_teardown removed the topology snapshot, pytest_teardown the session one.
    assert exists(utils_lab, "server1", *paths, "/etc/mh-raw") == [False, False, False, False]
    assert ssh(utils_lab, "server1", "grep -c junk /etc/hosts || true").split() == ["0"]
    assert exists(utils_lab, "server1", "/etc/motd") == [True]


def test_logs_crashes__failing_setup_and_body(pytester: pytest.Pytester, utils_lab: Lab) -> None:
    """A fixture that reads logs and crashes then fails errors; a failing body is reported with its core.

    The tests after each failure see only their own log lines, journal entries and cores, and the
    utilities leave nothing on the hosts.
    """
    mode, _, glob = core_locations(ssh(utils_lab, "server1", "cat /proc/sys/kernel/core_pattern"))
    if mode == "unavailable":
        pytest.skip("kernel.core_pattern pipes cores to a handler the crashes utility cannot read")
    # Where the suite's log and fake core live, where cores are searched, temporary files, and the snapshots.
    # The parent of the hosts' leases (/tmp/pytest-mh-ansible-leases) stays once made, by design: a
    # session that removed it could race another controller's mkdir of its lease.
    listing = (
        "ls /var/tmp /var/log /root /; ls -I pytest-mh-ansible-leases /tmp;"
        " ls -A /var/lib/mh-ansible/snapshots 2>/dev/null; true"
    )
    before = {host: ssh(utils_lab, host, listing) for host in ("server1", "server2")}
    pytester.makepyfile(test_logs=Path(__file__).with_name("logs_crashes_suite.py").read_text())
    result = run(pytester, utils_lab, "-v", "-rA", "-o", "mh_crashes=fail")
    result.assert_outcomes(passed=3, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*test_01_failing_setup*ERROR*", "*test_02_after_failing_setup*PASSED*"])
    result.stdout.fnmatch_lines(["*test_03_failing_body*FAILED*", "*test_04_after_failing_body*PASSED*"])
    result.stdout.fnmatch_lines(["*RuntimeError: the fixture fails after reading logs and crashes*"])
    core = "/var/tmp/" + glob.rstrip("*") + "mh-fake"
    result.stdout.fnmatch_lines(
        [
            "*_ test_03_failing_body?both? _*",
            "*cannot read log file '/var/log/mh-missing.log'*",
            "*- mh crashes -*",
            f"server1: core: {core}",
        ]
    )
    assert "server2: core" not in result.stdout.str()
    after = {host: ssh(utils_lab, host, listing) for host in ("server1", "server2")}
    assert after == before


SNAPSHOT_SUITE = """
import logging

import pytest

from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

SYSV = TopologyMark("sysv", Topology(TopologyDomain("default", server=1)), fixtures=dict(server="default.server[0]"))
STATE = "stat -c '%a %U %G %s' /etc/mh-snap.conf; md5sum /etc/mh-snap.conf; "
STATE += "ls -A /var/lib/mh-ansible/snapshots 2>/dev/null; true"


@pytest.mark.topology(SYSV)
def test_1_prepare(server):
    # A session-long file: written before the test scope, so the test's edit is reverted to it.
    server.host.conn.run("printf 'port = 1\\\\nname = a\\\\n' > /etc/mh-snap.conf; chmod 0640 /etc/mh-snap.conf")


@pytest.mark.topology(SYSV)
def test_2_edit(server, caplog):
    caplog.set_level(logging.DEBUG, logger="pytest_mh_ansible.rollback")
    pytest.before = server.host.conn.run(STATE).stdout
    assert server.config_files.line("/etc/mh-snap.conf", "port = 8080", regexp="^port")
    server.fs.chmod("0600", "/etc/mh-snap.conf")
    assert server.host.conn.run("cat /etc/mh-snap.conf").stdout == "port = 8080\\nname = a\\n"
    print("LOG:", [r.getMessage() for r in caplog.records if "snapshot" in r.getMessage()])


@pytest.mark.topology(SYSV)
def test_3_back(server):
    assert server.host.conn.run(STATE).stdout == pytest.before
    server.host.conn.run("rm /etc/mh-snap.conf")
"""


@pytest.mark.parametrize(
    ("executor", "by_agent"), [("warm", True), ("standard", False)], ids=["warm-agent", "standard-modules"]
)
def test_snapshots__taken_and_restored_by_the_agent_else_by_modules(
    pytester: pytest.Pytester, utils_lab: Lab, executor: str, by_agent: bool
) -> None:
    """The journal's path snapshots: the agent's script on the warm executor, the modules on the
    standard one; either way the file's content and mode come back and no snapshot is left."""
    pytester.makepyfile(test_snap=SNAPSHOT_SUITE)
    result = run(pytester, utils_lab, "-v", "-s", f"--mh-executor={executor}", "--log-level=DEBUG", "-rA")
    result.assert_outcomes(passed=3)
    out = result.stdout.str()
    taken = [line for line in out.splitlines() if "LOG: " in line]
    assert len(taken) == 1, out
    assert ("taken by the agent in" in taken[0]) is by_agent, taken[0]
    assert ("mh_ansible.rollback.snapshot {" in taken[0]) is not by_agent, taken[0]
    # The restore ran in test_2's teardown: -rA shows its captured log.
    assert ("restored by the agent in" in out) is by_agent
    if not by_agent:
        assert "mh_ansible.rollback.restore" in out
    left = ssh(utils_lab, "server1", f"ls -A {SNAPSHOTS} 2>/dev/null; test -e /etc/mh-snap.conf || echo gone")
    assert left == "gone\n"
