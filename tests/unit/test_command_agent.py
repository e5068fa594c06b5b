"""The agent's ``exec`` operation, run locally: what the command gets, and that it dies with the channel."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_mh_ansible._private.ansible.command_agent import CommandAgents
from pytest_mh_ansible._private.ansible.warm import _BOOT, AgentError, _Agent, _Channel

CLEAN_ENV = ["env", "-i", "LANG=C", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "MH_AGENT_TEST=from-start"]


@pytest.fixture
def agent() -> Iterator[_Agent]:
    """An agent on this machine, started as a login would start it: a clean environment, C locale."""
    channel = _Channel([*CLEAN_ENV, sys.executable, "-c", _BOOT], shell=False, cwd=None)
    started = _Agent(label="local test agent", channel=channel)
    started.start(None)
    try:
        yield started
    finally:
        started.stop()


def _exec(agent: _Agent, argv: list[str], stdin: bytes = b"", **header: Any) -> tuple[int, bytes, bytes]:
    answer, out, err = agent.run({"argv": argv, **header}, stdin, op="exec")
    return int(answer["rc"]), out, err


def test_exec__rc_stdout_stderr_and_stdin(agent: _Agent) -> None:
    assert _exec(agent, ["/bin/sh", "-c", "cat; echo err >&2; exit 3"], b"in\n") == (3, b"in\n", b"err\n")
    data = os.urandom(300_000)  # more than a pipe holds: stdin is fed while stdout is read
    assert _exec(agent, ["/bin/sh", "-c", "cat"], data) == (0, data, b"")


def test_exec__the_environment_the_agent_was_started_with_not_pythons(agent: _Agent) -> None:
    """Python sets LC_CTYPE in a C locale (PEP 538); a command over ssh would not see it."""
    rc, out, _ = _exec(agent, ["/bin/sh", "-c", 'echo "${LC_CTYPE-unset} $MH_AGENT_TEST"'])
    assert (rc, out) == (0, b"unset from-start\n")
    rc, out, _ = _exec(agent, ["/bin/sh", "-c", "echo $MH_X"], env={"MH_X": "given"})
    assert out == b"given\n"


def test_exec__a_new_session_with_default_signal_dispositions(agent: _Agent) -> None:
    code = "import os; print(os.getsid(0) == os.getpid())"
    assert _exec(agent, [sys.executable, "-c", code])[1] == b"True\n"
    ignored = int(_exec(agent, ["/bin/sh", "-c", "grep SigIgn /proc/self/status"])[1].split()[1], 16)
    for number in (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ):  # what Python ignores or handles itself
        assert not ignored & (1 << (number - 1)), f"{signal.Signals(number).name} is ignored in the command"


def test_exec__a_missing_program_is_127(agent: _Agent) -> None:
    rc, _, err = _exec(agent, ["/nonexistent/program"])
    assert rc == 127
    assert b"cannot run /nonexistent/program" in err


def test_exec__the_command_group_dies_with_the_channel(agent: _Agent, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = f"echo $$ > {pids}; sleep 60 & echo $! >> {pids}; wait"
    errors: list[BaseException] = []

    def call() -> None:
        try:
            _exec(agent, ["/bin/sh", "-c", script])
        except BaseException as err:
            errors.append(err)

    worker = threading.Thread(target=call)
    worker.start()
    deadline = time.monotonic() + 10
    while (not pids.exists() or len(pids.read_text().split()) < 2) and time.monotonic() < deadline:
        time.sleep(0.02)
    numbers = [int(pid) for pid in pids.read_text().split()]
    agent.channel.close(wait=5)
    worker.join(10)
    assert errors
    assert isinstance(errors[0], AgentError)

    def alive(pid: int) -> bool:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 0)
            return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
        return False

    deadline = time.monotonic() + 5
    while any(map(alive, numbers)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(map(alive, numbers))


class _FakePlugin:
    """Just enough of a connection plugin for CommandAgents to decide on it."""

    def __init__(self, load_name: str) -> None:
        self._load_name = load_name


def test_command_agents__connections_without_a_channel_take_the_standard_path(caplog: pytest.LogCaptureFixture) -> None:
    agents = CommandAgents("h1", interpreter="python3")
    with caplog.at_level(logging.INFO, logger="pytest_mh_ansible.conn"):
        for _ in range(3):
            assert agents.run(_FakePlugin("ansible.builtin.paramiko"), None, ["/bin/sh", "-c", "true"], None) is None
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "h1: commands on the standard path: the paramiko connection has no persistent channel for the agent"
    ]


@pytest.mark.parametrize("delay", ["0", "0.3"])
def test_start__a_boot_command_that_ends_at_once_is_reported_by_what_it_said(delay: str) -> None:
    """Whether the boot command is gone before the agent is sent (a broken pipe) or after (no answer),
    the error is what it printed: here, the interpreter it did not find."""
    script = f"sleep {delay}; echo '/nonexistent/python3: not found' >&2; exit 127"
    channel = _Channel(["/bin/sh", "-c", script], shell=False, cwd=None)
    agent = _Agent(label="local test agent", channel=channel)
    try:
        if delay == "0":
            channel._proc.wait()  # gone before the start writes: the write fails with EPIPE
        with pytest.raises(AgentError, match=r"the agent did not start: /nonexistent/python3: not found"):
            agent.start(None)
    finally:
        channel.close(wait=5)


def test_script__runs_the_source_with_its_request_in_a_child_and_keeps_nothing(agent: _Agent) -> None:
    """The ``script`` operation: a fresh namespace per call (globals do not survive), a child process."""
    source = b"import os, json\nSEEN = globals().get('SEEN', 0) + 1\nprint(json.dumps([REQUEST, SEEN, os.getpid()]))\n"
    answers = [agent.run({"request": {"n": n}}, source, op="script") for n in (1, 2)]
    outputs = [json.loads(out) for _, out, _ in answers]
    assert [answer["rc"] for answer, _, _ in answers] == [0, 0]
    assert [out[:2] for out in outputs] == [[{"n": 1}, 1], [{"n": 2}, 1]]
    assert agent.pid not in {out[2] for out in outputs}


def test_script__failures_are_an_exit_code_and_a_traceback(agent: _Agent) -> None:
    answer, out, err = agent.run({"request": None}, b"raise ValueError('no such thing')\n", op="script")
    assert (answer["rc"], out) == (1, b"")
    assert b"ValueError: no such thing" in err
    answer, _, err = agent.run({"request": None}, b"def (:\n", op="script")
    assert answer["rc"] == 1
    assert b"does not compile" in err
    answer, _, _ = agent.run({"request": None}, b"raise SystemExit(3)\n", op="script")
    assert answer["rc"] == 3
    assert _exec(agent, ["/bin/sh", "-c", "echo still here"])[1] == b"still here\n"  # the agent lives on


def test_command_agents__a_script_waits_for_a_starting_agent_a_command_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command never waits for the agent (the standard path runs it meanwhile); the journal's
    script waits for an agent that is coming up, so its path does not depend on the machine's load."""
    slow_boot = f'sleep 0.5; exec {sys.executable} -c "$MH_BOOT"'

    def open_slow(conn: Any, become: Any, interpreter: str, **_: Any) -> tuple[_Channel, None]:
        return _Channel([*CLEAN_ENV, f"MH_BOOT={_BOOT}", "/bin/sh", "-c", slow_boot], shell=False, cwd=None), None

    monkeypatch.setattr("pytest_mh_ansible._private.ansible.command_agent.open_channel", open_slow)
    agents = CommandAgents("h1", interpreter=sys.executable)
    local = _FakePlugin("ansible.builtin.local")
    try:
        started = time.monotonic()
        assert agents.run(local, None, ["/bin/sh", "-c", "true"], None) is None  # starts it, does not wait
        assert agents.run(local, None, ["/bin/sh", "-c", "true"], None) is None  # still starting: no wait
        assert time.monotonic() - started < 0.4
        served = agents.script(local, None, b"print(REQUEST['n'] * 2)\n", {"n": 21})
        assert time.monotonic() - started >= 0.5
        assert served is not None
        assert served[:2] == (0, b"42\n")
        assert agents.run(local, None, ["/bin/sh", "-c", "echo via agent"], None) == (0, b"via agent\n", b"")
    finally:
        agents.close()
