"""A run killed in the middle of a test (``kill -9``): the next run, or ``recover``, undoes what it left.

The killed run changed a file, made a user and started a service, then died without its rollback.
Its journal on the host names each change's undo; the next session that uses the host replays it
before its first test, says so in the terminal, and its own tests then find the host clean. With
pytest-xdist, a worker that dies leaves the same journal, and the summary of the run that recovers
it names the host and the changes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_mh_ansible.lab import Lab, dummy_init_script

pytestmark = pytest.mark.integration

HEADER = textwrap.dedent("""
    import os
    import pathlib
    import time

    import pytest
    from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

    SYSV = TopologyMark(
        "sysv", Topology(TopologyDomain("default", server=1)), fixtures=dict(server="default.server[0]")
    )
""")

VICTIM = HEADER + textwrap.dedent("""
    @pytest.mark.topology(SYSV)
    def test_changes_then_hangs(server):
        run = server.host.ansible.run
        run("ansible.builtin.copy", dest="/etc/crash.conf", content="changed by the killed run\\n")
        run("ansible.builtin.user", name="crashuser", comment="made by the killed run")
        run("ansible.builtin.service", name="mhcrash", state="started")
        pathlib.Path(os.environ["MH_CRASH_READY"]).write_text("ready")
        time.sleep(300)
""")

NEXT = HEADER + textwrap.dedent("""
    @pytest.mark.topology(SYSV)
    def test_the_host_is_clean(server):
        conn = server.host.conn
        assert conn.run("cat /etc/crash.conf").stdout == "original\\n"
        assert conn.run("getent passwd crashuser", raise_on_error=False).rc == 2
        assert conn.run("service mhcrash status", raise_on_error=False).rc == 3
""")

XDIST_VICTIM = HEADER + textwrap.dedent("""
    @pytest.mark.topology(SYSV)
    def test_a_worker_dies(server):
        run = server.host.ansible.run
        run("ansible.builtin.copy", dest="/etc/crash.conf", content="changed by the killed worker\\n")
        run("ansible.builtin.user", name="crashuser", comment="made by the killed worker")
        run("ansible.builtin.service", name="mhcrash", state="started")
        os.kill(os.getpid(), 9)
""")


def _state(lab: Lab) -> str:
    return lab.run_inside(
        "server1",
        "cat /etc/crash.conf; getent passwd crashuser; service mhcrash status >/dev/null 2>&1; echo svc=$?; "
        "ls /var/lib/mh-ansible/journal 2>&1",
    ).stdout


@pytest.fixture
def crash_host(states_lab: Lab) -> Lab:
    """server1 with an original /etc/crash.conf and a stopped sysv service mhcrash (outside any journal)."""
    states_lab.run_inside(
        "server1",
        "printf 'original\\n' > /etc/crash.conf; "
        f"cat > /etc/init.d/mhcrash <<'EOF'\n{dummy_init_script('mhcrash')}EOF\n"
        "chmod 755 /etc/init.d/mhcrash; service mhcrash stop >/dev/null 2>&1; true",
    )
    return states_lab


def _args(lab: Lab, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--mh-inventory={lab.inventory_path}",
        "--mh-limit=server1", "--mh-lease-ttl=3", *extra,
    ]  # fmt: skip


def _kill_mid_test(pytester: pytest.Pytester, lab: Lab) -> None:
    """Run the victim suite and ``kill -9`` it once its test has made its changes."""
    pytester.makepyfile(test_victim=VICTIM)
    ready = pytester.path / "ready"
    env = {**os.environ, "MH_CRASH_READY": str(ready)}
    victim = subprocess.Popen(
        [*_args(lab), "test_victim.py"], cwd=pytester.path, env=env, stdout=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert victim.poll() is None, "the victim run ended before its test made its changes"
        assert time.monotonic() < deadline, "the victim run's test did not make its changes in 120 s"
        time.sleep(0.2)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    (pytester.path / "test_victim.py").unlink()


def test_crash__the_next_run_restores_what_a_killed_run_left(pytester: pytest.Pytester, crash_host: Lab) -> None:
    _kill_mid_test(pytester, crash_host)
    left = _state(crash_host)
    assert "changed by the killed run" in left
    assert "crashuser:" in left
    assert "svc=0" in left
    pytester.makepyfile(test_next=NEXT)
    result = pytester.run(*_args(crash_host, "-rA", "test_next.py"))
    assert result.ret == 0, result.stdout.str()
    for change in ("ansible.builtin.service name=mhcrash", "ansible.builtin.user name=crashuser",
                   "ansible.builtin.copy dest=/etc/crash.conf"):  # fmt: skip
        result.stdout.fnmatch_lines([f"*[[]server1[]] restored: {change}* (left by session *"])
    result.stdout.fnmatch_lines(["*changes left by sessions that are gone*"])
    after = _state(crash_host)
    assert after.startswith("original\n")
    assert "crashuser" not in after
    assert "svc=3" in after
    assert "No such file or directory" in after  # no journal is left on the host


def test_crash__recover_restores_what_a_killed_run_left(pytester: pytest.Pytester, crash_host: Lab) -> None:
    _kill_mid_test(pytester, crash_host)
    time.sleep(4)  # the dead run's lease expires (ttl 3 s): recover takes it over
    done = subprocess.run(
        [str(Path(sys.executable).with_name("pytest-mh-ansible")), "recover", "-i", str(crash_host.inventory_path),
         "--host", "server1"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[server1] restored: ansible.builtin.user name=crashuser" in done.stdout
    assert "recover: 3 change(s) undone on 1 host(s), nothing left" in done.stdout
    after = _state(crash_host)
    assert after.startswith("original\n")
    assert "crashuser" not in after
    assert "svc=3" in after


def test_crash__a_killed_xdist_worker_is_named_and_its_host_restored(
    pytester: pytest.Pytester, crash_host: Lab
) -> None:
    pytester.makepyfile(test_victim=XDIST_VICTIM, test_next=NEXT)
    result = pytester.run(*_args(crash_host, "-n", "1", "-p", "xdist", "test_victim.py"))
    assert "crashed" in result.stdout.str()
    assert "changed by the killed worker" in _state(crash_host)
    result = pytester.run(*_args(crash_host, "-n", "1", "-p", "xdist", "-rA", "test_next.py"))
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*changes left by sessions that are gone*",
            "*[[]server1[]] restored: ansible.builtin.service name=mhcrash*",
        ],
        consecutive=False,
    )
    assert _state(crash_host).startswith("original\n")
