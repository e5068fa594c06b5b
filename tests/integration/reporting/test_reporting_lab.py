"""Reporting on lab hosts: artifacts of a failing test, Ctrl-C mid-test, and a host that dies mid-session."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET

import pytest
import yaml

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

HEADER = """
import pytest
from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

PAIR = TopologyMark("pair", Topology(TopologyDomain("default", client=1, server=1)),
                    fixtures=dict(client="default.client[0]", server="default.server[0]"))
CLIENT = TopologyMark("client", Topology(TopologyDomain("default", client=1)),
                      fixtures=dict(client="default.client[0]"))
SERVER = TopologyMark("server", Topology(TopologyDomain("default", server=1)),
                      fixtures=dict(server="default.server[0]"))
"""


def args(lab: Lab, *more: str) -> list[str]:
    return ["-p", "no:cacheprovider", "-p", "no:randomly", f"--mh-inventory={lab.inventory_path}", *more]


def host_pid(lab: Lab, name: str) -> int:
    """The PID 1 of lab host ``name`` as seen from the machine."""
    pid = next(h.pid for h in lab.hosts if h.name == name)
    assert pid is not None, f"lab host {name} is not running"
    return pid


def test_reporting_lab__artifacts_of_a_failing_test(pytester: pytest.Pytester, rep_lab: Lab) -> None:
    extra = pytester.path / "artifacts.yml"
    phases = {"test": ["/var/log/mhrep/*.log", "/etc/mhrep"], "session_teardown": ["/etc/hostname"]}
    extra.write_text(yaml.safe_dump({"all": {"hosts": {"client1": {"mh_artifacts": phases}}}}))
    pytester.makepyfile(
        test_fail=HEADER
        + textwrap.dedent("""
        @pytest.mark.topology(PAIR)
        def test_a(client, server):
            client.host.conn.run("mkdir -p /var/log/mhrep /etc/mhrep/sub && echo app-log > /var/log/mhrep/app.log "
                                 "&& echo not-asked > /var/log/mhrep/app.txt && echo deep > /etc/mhrep/sub/deep.conf")
            client.host.ansible.run("ansible.builtin.copy", dest="/etc/mhrep/app.conf", content="port = 8080\\n")
            server.host.conn.run("uname -n")
            assert False, "boom"

        @pytest.mark.topology(PAIR)
        def test_ok(client):
            client.host.conn.run("true")
        """)
    )
    try:
        result = pytester.runpytest_subprocess(*args(rep_lab, f"--mh-inventory={extra}"))
        result.assert_outcomes(failed=1, passed=1)
    finally:
        rep_lab.run_inside("client1", "rm -rf /var/log/mhrep /etc/mhrep")
    test_dir = pytester.path / "artifacts" / "tests" / "test_fail" / "test_a[pair]"
    host_dir = test_dir / "client" / "client1"
    assert (host_dir / "var/log/mhrep/app.log").read_text() == "app-log\n"
    assert (host_dir / "etc/mhrep/sub/deep.conf").read_text() == "deep\n"
    assert (host_dir / "etc/mhrep/app.conf").read_text() == "port = 8080\n"  # fetched before the rollback
    assert not (host_dir / "var/log/mhrep/app.txt").exists()
    assert not (test_dir / "server").exists()  # server1 asks for nothing
    log = (test_dir / "test.log").read_text()
    assert "[client1] conn: mkdir -p /var/log/mhrep" in log
    assert "[server1] conn: uname -n -> rc=0" in log
    assert "[client1] modules: ansible.builtin.copy {'dest': '/etc/mhrep/app.conf'" in log
    assert "[client1] rollback: reverted: ansible.builtin.copy dest=/etc/mhrep/app.conf" in log
    # on-failure (the default): nothing for the passing test, and the session teardown went fine
    assert not (pytester.path / "artifacts" / "tests" / "test_fail" / "test_ok[pair]").exists()
    assert not (pytester.path / "artifacts" / "session").exists()
    result.stdout.fnmatch_lines(["*artifacts and log of this test: *test_fail/test_a?pair?"])


SIGINT_CONFTEST = """
from pathlib import Path

from pytest_mh_ansible import MultihostHost, MultihostRole

class MyHost(MultihostHost):
    def pytest_teardown(self):
        Path(__file__).with_name("host-teardown-" + self.name).write_text("ran")

def pytest_mh_register(registry):
    registry.role("client", MultihostRole, host=MyHost)
"""


def test_reporting_lab__sigint_mid_test_rolls_back_and_tears_down(pytester: pytest.Pytester, rep_lab: Lab) -> None:
    assert rep_lab.run_inside("client1", "printf 'original\\n' > /etc/mhrep.conf").returncode == 0
    pytester.makeconftest(SIGINT_CONFTEST)
    pytester.makepyfile(
        test_sigint=HEADER
        + textwrap.dedent("""
        import time
        from pathlib import Path

        @pytest.mark.topology(CLIENT)
        def test_long(client):
            assert client.host.ansible.run("ansible.builtin.copy", dest="/etc/mhrep.conf", content="changed\\n").changed
            Path(__file__).with_name("running").write_text("yes")
            time.sleep(120)

        @pytest.mark.topology(CLIENT)
        def test_never(client):
            Path(__file__).with_name("never").write_text("ran")
        """)
    )
    cmd = [sys.executable, "-m", "pytest", *args(rep_lab), "-p", "no:benchmark"]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        running = pytester.path / "running"
        while not running.exists():
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() - started < 90, "the test never started"
            time.sleep(0.1)
        assert rep_lab.run_inside("client1", "cat /etc/mhrep.conf").stdout == "changed\n"
        interrupted = time.monotonic()
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    try:
        assert proc.returncode == pytest.ExitCode.INTERRUPTED, output
        assert time.monotonic() - interrupted < 30
        said = "pytest-mh-ansible: SIGINT received during test_sigint.py::test_long[client]: stopping the test"
        assert said in output
        assert rep_lab.run_inside("client1", "cat /etc/mhrep.conf").stdout == "original\n", output
        assert (pytester.path / "host-teardown-client1").read_text() == "ran", output
        assert not (pytester.path / "never").exists()
        assert "INTERNALERROR" not in output
    finally:
        rep_lab.run_inside("client1", "rm -f /etc/mhrep.conf")


DEAD_TESTS = """
import subprocess
import time

@pytest.mark.topology(CLIENT)
def test_1_alive(client):
    client.host.conn.run("true")

@pytest.mark.topology(CLIENT)
def test_2_dies(client):
    subprocess.run(["nsenter", "-t", "{pid}", "-a", "pkill", "-x", "sshd"], check=True)
    time.sleep(0.5)
    {call}

@pytest.mark.topology(CLIENT)
def test_3_later(client):
    client.host.conn.run("true")

@pytest.mark.topology(PAIR)
def test_4_later_pair(client, server):
    server.host.conn.run("true")

@pytest.mark.topology(SERVER)
def test_5_server(server):
    server.host.conn.run("true")
"""


@pytest.mark.parametrize(
    "call",
    [
        pytest.param('client.host.conn.run("true")', id="command"),
        pytest.param('client.host.ansible.run("ansible.builtin.command", cmd="true")', id="module"),
    ],
)
def test_reporting_lab__host_dies_mid_session(pytester: pytest.Pytester, rep_lab: Lab, call: str) -> None:
    """The host's sshd is killed during a test; the call that finds out is a command or a module call."""
    pid = host_pid(rep_lab, "client1")
    body = textwrap.dedent(DEAD_TESTS).replace("{pid}", str(pid)).replace("{call}", call)
    pytester.makepyfile(test_dead=HEADER + body)
    try:
        started = time.monotonic()
        # The dead host keeps this run's lease (it cannot be given back): a short TTL, so that the next
        # run on this lab waits seconds for it to expire, not the default minute.
        result = pytester.runpytest_subprocess(*args(rep_lab, "--junitxml=junit.xml", "--mh-lease-ttl=3"), timeout=240)
        elapsed = time.monotonic() - started
    finally:
        # sshd back, for the other tests of this lab
        restarted = rep_lab.run_inside("client1", "/usr/sbin/sshd")
        assert restarted.returncode == 0, restarted.stderr
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output
    assert "INTERNALERROR" not in output
    result.assert_outcomes(passed=2, failed=1, errors=2)
    # How the loss shows depends on the moment: a new connection is refused, or the open one breaks.
    result.stdout.re_match_lines(
        [r"E .*HostUnreachableError: host 'client1' is unreachable: .*(Connection refused|Broken pipe|reset)"]
    )
    cases = {case.get("name"): case for case in ET.parse(pytester.path / "junit.xml").iter("testcase")}
    failure = cases["test_2_dies[client]"].find("failure")
    assert failure is not None, output
    assert "client1" in (failure.get("message") or ""), output
    for name in ("test_3_later[client]", "test_4_later_pair[pair]"):
        error = cases[name].find("error")
        assert error is not None, output
        assert "stopped answering earlier in this session" in (error.get("message") or "")
        assert float(cases[name].get("time") or 0) < 2, f"{name} did not error at once: {output}"
    assert cases["test_5_server[server]"].find("failure") is None
    assert elapsed < 120, output
