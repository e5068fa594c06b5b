"""SIGTERM and SIGHUP mid-test on lab hosts: the test stops, its changes are rolled back, a line says so."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

HEADER = """
import time
from pathlib import Path

import pytest
from pytest_mh_ansible import MultihostHost, MultihostRole, Topology, TopologyDomain, TopologyMark

CLIENT = TopologyMark("client", Topology(TopologyDomain("default", client=1)),
                      fixtures=dict(client="default.client[0]"))
SERVER = TopologyMark("server", Topology(TopologyDomain("default", server=1)),
                      fixtures=dict(server="default.server[0]"))

def change(role):
    host = role.host
    host.ansible.run("ansible.builtin.copy", dest="/etc/mhsig.conf", content="changed\\n")
    host.ansible.run("ansible.builtin.user", name="mhsiguser", state="present")
    Path(__file__).with_name("running-" + host.name).write_text("yes")
"""

CONFTEST = """
from pathlib import Path

from pytest_mh_ansible import MultihostHost, MultihostRole

class MyHost(MultihostHost):
    def pytest_teardown(self):
        Path(__file__).with_name("host-teardown-" + self.name).write_text("ran")
        if Path(__file__).with_name("fail-host-teardown").exists():
            raise RuntimeError("the host teardown fails on purpose")

class SlowRole(MultihostRole):
    def teardown(self):
        if Path(__file__).with_name("slow-teardown").exists():
            Path(__file__).with_name("in-teardown").write_text("yes")
            import time
            time.sleep(120)
        super().teardown()

def pytest_mh_register(registry):
    registry.role("client", SlowRole, host=MyHost)
    registry.role("server", SlowRole, host=MyHost)
"""

LONG = HEADER + textwrap.dedent("""
    @pytest.mark.topology(CLIENT)
    def test_long(client):
        change(client)
        time.sleep(120)

    @pytest.mark.topology(CLIENT)
    def test_never(client):
        Path(__file__).with_name("never").write_text("ran")
""")


def state(lab: Lab, host: str) -> str:
    return lab.run_inside(host, "cat /etc/mhsig.conf; getent passwd mhsiguser || echo no-user").stdout


ORIGINAL = "original\nno-user\n"


@pytest.fixture
def prepared(sig_lab: Lab, pytester: pytest.Pytester) -> Iterator[pytest.Pytester]:
    for host in ("client1", "server1"):
        assert sig_lab.run_inside(host, "printf 'original\\n' > /etc/mhsig.conf").returncode == 0
    pytester.makeconftest(CONFTEST)
    yield pytester
    for host in ("client1", "server1"):
        sig_lab.run_inside(host, "rm -f /etc/mhsig.conf; userdel -r mhsiguser 2>/dev/null; true")


def start(pytester: pytest.Pytester, lab: Lab, *more: str, tmpdir: Path | None = None) -> subprocess.Popen[str]:
    """The inner pytest run; ``tmpdir``: its TMPDIR (where its transports make their ControlPath dirs)."""
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:benchmark"]
    cmd += [f"--mh-inventory={lab.inventory_path}", *more]
    env = None if tmpdir is None else {**os.environ, "TMPDIR": str(tmpdir)}
    return subprocess.Popen(
        cmd, cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )


def wait_for(proc: subprocess.Popen[str], ready: Callable[[], bool], what: str, limit: float = 120) -> None:
    started = time.monotonic()
    while not ready():
        if proc.poll() is not None:
            raise AssertionError(f"pytest ended before {what}:\n{proc.stdout.read() if proc.stdout else ''}")
        assert time.monotonic() - started < limit, f"never {what}"
        time.sleep(0.1)


def finish(proc: subprocess.Popen[str], timeout: float = 90) -> str:
    try:
        output, _ = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return output


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_signal_mid_test__test_stopped_changes_rolled_back_and_said(
    prepared: pytest.Pytester, sig_lab: Lab, signum: signal.Signals
) -> None:
    prepared.makepyfile(test_sig=LONG)
    proc = start(prepared, sig_lab)
    wait_for(proc, (prepared.path / "running-client1").exists, "the test changed the host")
    assert state(sig_lab, "client1").startswith("changed\nmhsiguser:")
    sent = time.monotonic()
    proc.send_signal(signum)
    output = finish(proc)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output
    assert time.monotonic() - sent < 60
    assert (
        f"pytest-mh-ansible: {signum.name} received during test_sig.py::test_long[client]: stopping the test; "
        "its teardown, the rollback and the host teardown still run" in output
    )
    assert output.count(f"pytest-mh-ansible: {signum.name} received during") == 1
    assert f"pytest-mh-ansible: the run ended on {signum.name}; the rollback and teardown ran" in output
    assert state(sig_lab, "client1") == ORIGINAL, output
    assert (prepared.path / "host-teardown-client1").read_text() == "ran", output
    assert not (prepared.path / "never").exists()
    assert "INTERNALERROR" not in output


def test_signal_and_a_failing_session_teardown__the_run_still_ends_as_interrupted(
    prepared: pytest.Pytester, sig_lab: Lab
) -> None:
    """Found by the soak: session teardown errors turned the exit status of an interrupted run into 1."""
    prepared.makepyfile(test_sig=LONG)
    (prepared.path / "fail-host-teardown").write_text("yes")
    proc = start(prepared, sig_lab)
    wait_for(proc, (prepared.path / "running-client1").exists, "the test changed the host")
    proc.send_signal(signal.SIGHUP)
    output = finish(proc)
    assert "pytest-mh-ansible: session teardown errors" in output, output
    assert "the host teardown fails on purpose" in output
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output
    assert state(sig_lab, "client1") == ORIGINAL, output


def test_second_signal__exits_at_once_and_lists_what_was_not_reverted(prepared: pytest.Pytester, sig_lab: Lab) -> None:
    prepared.makepyfile(test_sig=LONG)
    (prepared.path / "slow-teardown").write_text("yes")
    # Exiting at once leaves the lease on client1 to expire by itself: a short TTL, so that the next
    # test on this lab waits seconds for it, not the default minute.
    # A short TMPDIR of its own (a ControlPath must fit in a socket path's 108 bytes).
    tmpdir = Path(tempfile.mkdtemp(prefix="mhsig"))
    try:
        proc = start(prepared, sig_lab, "--mh-lease-ttl=3", tmpdir=tmpdir)
        wait_for(proc, (prepared.path / "running-client1").exists, "the test changed the host")
        proc.send_signal(signal.SIGTERM)
        wait_for(proc, (prepared.path / "in-teardown").exists, "the role's teardown started")
        assert list(tmpdir.glob("mh-cp*")), "the session made no ControlPath directory in its TMPDIR"
        time.sleep(1.2)  # a repeat within a second counts as the same signal
        proc.send_signal(signal.SIGTERM)
        output = finish(proc, timeout=30)
        # No close ran, but the exit removed the session's ControlPath directories (it left three).
        left = [path.name for path in tmpdir.glob("mh-cp*")]
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "pytest-mh-ansible: SIGTERM received again: exiting now; 2 change(s) NOT reverted:" in output
    assert "  not reverted: [client1] ansible.builtin.user name=mhsiguser state=present" in output
    assert "  not reverted: [client1] ansible.builtin.copy dest=/etc/mhsig.conf" in output
    assert state(sig_lab, "client1").startswith("changed\nmhsiguser:")  # left as said
    assert left == [], f"the exit at once left {left} in TMPDIR"


IN_FLIGHT = HEADER + textwrap.dedent("""
    @pytest.mark.topology(CLIENT)
    def test_in_flight(client):
        client.host.ansible.run(
            "ansible.builtin.shell",
            cmd="echo changed > /etc/mhsig.conf; touch /tmp/mhsig-in-flight; sleep 120",
            revert_paths=["/etc/mhsig.conf"],
        )
""")


def test_signal_during_a_module_call__call_abandoned_and_its_change_rolled_back(
    prepared: pytest.Pytester, sig_lab: Lab
) -> None:
    prepared.makepyfile(test_sig=IN_FLIGHT)
    sig_lab.run_inside("client1", "rm -f /tmp/mhsig-in-flight")
    proc = start(prepared, sig_lab)
    wait_for(
        proc, lambda: sig_lab.run_inside("client1", "test -e /tmp/mhsig-in-flight").returncode == 0, "module in flight"
    )
    proc.send_signal(signal.SIGTERM)
    output = finish(proc)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output
    assert state(sig_lab, "client1") == ORIGINAL, output
    # The module's process was killed with its channel, and no agent is left; a command the module
    # started may run on (as when Ansible's own ssh client is killed).
    assert sig_lab.run_inside("client1", "pgrep -f '[m]h-warm-agent' || true").stdout == "", output
    sig_lab.run_inside("client1", "pkill -f '[s]leep 120'; rm -f /tmp/mhsig-in-flight")


XDIST = HEADER + textwrap.dedent("""
    @pytest.mark.topology(CLIENT)
    def test_on_client(client):
        change(client)
        time.sleep(120)

    @pytest.mark.topology(SERVER)
    def test_on_server(server):
        change(server)
        time.sleep(120)
""")


def test_signal_to_the_xdist_controller__every_worker_rolls_back(prepared: pytest.Pytester, sig_lab: Lab) -> None:
    pytest.importorskip("xdist")
    prepared.makepyfile(test_sig=XDIST)
    proc = start(prepared, sig_lab, "-n", "2", "--dist", "loadgroup")
    both = (prepared.path / "running-client1", prepared.path / "running-server1")
    wait_for(proc, lambda: all(p.exists() for p in both), "both workers changed their host")
    assert state(sig_lab, "client1").startswith("changed")
    assert state(sig_lab, "server1").startswith("changed")
    proc.send_signal(signal.SIGTERM)  # to the controller only
    output = finish(proc)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "pytest-mh-ansible: SIGTERM received: passed on to the workers (gw0, gw1)" in output
    assert state(sig_lab, "client1") == ORIGINAL, output
    assert state(sig_lab, "server1") == ORIGINAL, output
    assert Path(prepared.path / "host-teardown-client1").exists(), output
    assert Path(prepared.path / "host-teardown-server1").exists(), output
