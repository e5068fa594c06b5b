"""Commands through the warm agent's open channel: the same results as an ssh client per command, and recovery."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from transport_helpers import connection

from pytest_mh_ansible.conn import Connection
from pytest_mh_ansible.errors import ProcessError, ProcessTimeoutError

pytestmark = pytest.mark.integration

TargetHost = Any  # conftest.TargetHost

# What a command can observe of how it was started. SSH_CLIENT and SSH_CONNECTION name the client's
# port, which differs per ssh session, and sudo's SUDO_COMMAND names the command it ran (the agent's is
# cut to its interpreter); everything else must be the same on both paths.
PROBE = r"""
echo "shell=$0 user=$(id -un) groups=$(id -G) pwd=$(pwd) umask=$(umask)"
env -0 | tr '\n\0' ' \n' | grep -v -e '^SSH_C' -e '^SUDO_COMMAND=' | sort
grep -E '^(SigIgn|SigBlk|NoNewPrivs|Cpus_allowed_list)' /proc/self/status
ls /proc/self/fd | sort -n | tr '\n' ' '; echo
[ -t 0 ] && echo tty || echo no-tty
ulimit -a
readlink /proc/self/fd/0 | sed 's/[0-9]//g'
"""


@pytest.fixture(scope="module")
def standard(target: TargetHost) -> Iterator[Connection]:
    """The non-root sudo user, an ssh client per command."""
    yield from connection(f"{target.name}-std", target.user_vars, agent=False)


@pytest.fixture
def agent(target: TargetHost) -> Iterator[Connection]:
    """The non-root sudo user, commands through the agent."""
    yield from connection(f"{target.name}-agent", target.user_vars, agent=True)


def _parent(conn: Connection, **options: Any) -> tuple[int, bool]:
    """The pid of the process that ran a command, and whether it is the agent.

    The parent's command line is not printed: on the standard path with become it holds sudo's
    success marker, and the ssh plugin takes what comes before a printed marker for a prompt. The
    bracket keeps the pattern from matching this command's own text in that command line.
    """
    line = conn.run("p=$PPID; grep -q 'mh-warm-agen[t]' /proc/$p/cmdline && echo $p agent || echo $p other", **options)
    ppid, _, kind = line.stdout.strip().partition(" ")
    return int(ppid), kind == "agent"


def _agent_pid(conn: Connection, **options: Any) -> int:
    """The pid of the agent that runs this connection's commands, once it is up (it starts in the background)."""
    deadline = time.monotonic() + 15
    while True:
        pid, under_agent = _parent(conn, **options)
        if under_agent:
            return pid
        assert time.monotonic() < deadline, "commands still do not run under the agent"
        time.sleep(0.05)


def test_agent__the_first_command_does_not_wait_for_the_agent(target: TargetHost) -> None:
    for conn in connection(f"{target.name}-first", target.user_vars, agent=True):
        assert not _parent(conn)[1]  # the standard path, while the agent starts
        _agent_pid(conn)


@pytest.mark.parametrize("become", [False, True], ids=["plain", "become"])
def test_agent__command_sees_what_an_ssh_command_sees(standard: Connection, agent: Connection, become: bool) -> None:
    _agent_pid(agent, become=become)
    for data in (None, "some input\n"):
        ours = agent.run(PROBE + "cat", become=become, input=data)
        theirs = standard.run(PROBE + "cat", become=become, input=data)
        assert ours.stdout == theirs.stdout
        assert (ours.rc, ours.stderr) == (theirs.rc, theirs.stderr)


def test_agent__one_agent_per_become_user_for_the_session(agent: Connection) -> None:
    plain = _agent_pid(agent)
    root = _agent_pid(agent, become=True)
    assert plain != root
    assert agent.run("id -un", become=True).stdout == "root\n"
    assert [_agent_pid(agent) for _ in range(3)] == [plain] * 3
    assert _agent_pid(agent, become=True) == root


def test_agent__killed_while_idle_is_started_again(agent: Connection, standard: Connection) -> None:
    first = _agent_pid(agent)
    standard.run(f"kill -9 {first}")
    time.sleep(0.2)
    assert agent.run("echo still here").stdout == "still here\n"
    assert _agent_pid(agent) != first


def test_agent__killed_during_a_command_fails_that_command_only(agent: Connection, standard: Connection) -> None:
    pid = _agent_pid(agent)
    marker = uuid.uuid4().hex
    with pytest.raises(ProcessError, match=r"ended during the command.*may have run") as info:
        agent.run(f"kill -9 {pid}; sleep 5; echo {marker}")
    assert info.value.stdout == ""
    assert agent.run("echo next").stdout == "next\n"
    assert _agent_pid(agent) != pid


def test_agent__timeout_kills_the_command_and_the_agent_stays(agent: Connection, standard: Connection) -> None:
    pid = _agent_pid(agent)
    digits = f"{uuid.uuid4().int % 10**9:09d}"
    with pytest.raises(ProcessTimeoutError):
        agent.run(f"sh -c 'sleep 90.{digits}'", timeout=1)
    assert standard.run(f"pgrep -f 'sleep 9[0].{digits}'", raise_on_error=False).rc == 1
    assert _agent_pid(agent) == pid


def test_agent__close_leaves_nothing_on_the_target(target: TargetHost, standard: Connection) -> None:
    pids = []
    for conn in connection(f"{target.name}-closing", target.user_vars, agent=True):
        pids = [_agent_pid(conn), _agent_pid(conn, become=True)]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        alive = standard.run(" ; ".join(f"test -d /proc/{pid} && echo {pid}" for pid in pids) + "; true").stdout
        if not alive.strip():
            break
        time.sleep(0.1)
    assert not alive.strip(), f"agents left running: {alive.split()}"


def test_agent__local_connection_sees_the_current_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for conn in connection("localhost", {"ansible_connection": "local"}, agent=True):
        _agent_pid(conn)
        monkeypatch.setenv("MH_AGENT_PROBE", "set after the agent started")
        assert conn.run('echo "$MH_AGENT_PROBE"').stdout == "set after the agent started\n"
        result = conn.run("echo out; echo err >&2; cat; exit 4", input=b"in\n", raise_on_error=False)
        assert (result.rc, result.stdout, result.stderr) == (4, "out\nin\n", "err\n")


def test_agent__a_host_without_that_python_takes_the_standard_path(
    target: TargetHost, caplog: pytest.LogCaptureFixture
) -> None:
    variables = {**target.user_vars, "ansible_python_interpreter": "/nonexistent/python3"}
    with caplog.at_level("INFO", logger="pytest_mh_ansible.modules"):
        for conn in connection(f"{target.name}-nopython", variables, agent=True):
            deadline = time.monotonic() + 15
            while "standard path from now on" not in caplog.text and time.monotonic() < deadline:
                assert not _parent(conn)[1]
                time.sleep(0.05)
    assert re.search(r"could not start.*/nonexistent/python3", caplog.text)
    assert "standard path from now on" in caplog.text
