"""pytest-mh's processes through the layer: live commands on a ``local`` connection, the base contract, containers."""

from __future__ import annotations

import logging
import os
import signal
import stat
import threading
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

import pytest_mh_ansible
from pytest_mh_ansible import Connection as AnsibleConnection
from pytest_mh_ansible._private.ansible.transport import AnsibleTransport
from pytest_mh_ansible.compat.conn import (
    Bash,
    Connection,
    ConnectionError,
    HostConnection,
    Process,
    ProcessError,
    ProcessInputBuffer,
    ProcessLogLevel,
    ProcessResult,
    ProcessTimeoutError,
)
from pytest_mh_ansible.compat.conn.container import (
    ContainerClient,
    ContainerConnectionError,
    ContainerProcessError,
    ContainerProcessTimeoutError,
)

# --- a compat host's connection on a local Ansible connection ----------------------------------------


@pytest.fixture
def conn() -> Iterator[HostConnection]:
    transport = AnsibleTransport("localhost", {"ansible_connection": "local"})
    connection = HostConnection(AnsibleConnection("localhost", {}, transport=transport), Bash(), host="localhost")
    yield connection
    connection.disconnect()


def test_compat_conn__cat_reads_stdin_and_answers_line_by_line_while_it_runs(conn: HostConnection) -> None:
    process = conn.async_run("cat; echo bye >&2")
    assert process.in_progress
    process.stdin.write("first\n")
    assert next(process.stdout) == "first"  # the answer comes before EOF: the stream is live
    process.stdin.write(b"second\n")
    assert next(process.stdout) == "second"
    process.send_eof()
    assert list(process.stderr) == ["bye"]
    result = process.wait()
    assert (result.rc, result.stdout_lines, result.stderr) == (0, ["first", "second"], "bye")
    assert not process.in_progress
    with pytest.raises(RuntimeError, match="not running"):
        process.stdin.write("late")


def test_compat_conn__input_env_and_cwd_of_async_run_and_async_exec(conn: HostConnection, tmp_path: Path) -> None:
    process = conn.async_run(
        'cat; echo "$GREETING from $(pwd)"', input="fed\n", env={"GREETING": "hi"}, cwd=str(tmp_path)
    )
    assert process.wait().stdout_lines == ["fed", f"hi from {tmp_path}"]
    exec_process = conn.async_exec(["printf", "%s|", "a b", "$HOME", "it's"])
    assert exec_process.command == "printf '%s|' 'a b' '$HOME' 'it'\"'\"'s'"
    assert exec_process.wait().stdout == "a b|$HOME|it's|"
    with pytest.raises(ValueError, match="did you mean async_run"):
        conn.async_exec("echo")  # type: ignore[arg-type]


@pytest.mark.parametrize(("sig", "rc"), [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGUSR1, 138)])
def test_compat_conn__send_signal_reaches_the_command(conn: HostConnection, sig: signal.Signals, rc: int) -> None:
    started = time.monotonic()
    process = conn.async_run("sleep 30")
    process.send_signal(sig)
    result = process.wait(raise_on_error=False)
    assert result.rc == rc
    assert time.monotonic() - started < 10


def test_compat_conn__send_signal_reaches_every_process_of_a_script(conn: HostConnection) -> None:
    process = conn.async_run("trap 'echo got TERM; exit 7' TERM; echo ready; sleep 30 & wait")
    assert next(process.stdout) == "ready"
    process.send_signal(signal.SIGTERM)
    result = process.wait(raise_on_error=False)
    assert (result.rc, result.stdout_lines) == (7, ["ready", "got TERM"])


@pytest.mark.skipif(os.geteuid() != 0, reason="sudo to another user without a password needs root")
def test_compat_conn__become_user_runs_the_live_command_as_that_user(conn: HostConnection) -> None:
    process = conn.async_run("id -un; cat; echo done >&2", become_user="nobody")
    process.stdin.write("x\n")
    assert [next(process.stdout), next(process.stdout)] == ["nobody", "x"]  # sudo's success line is not shown
    result = process.wait()
    assert (result.stdout_lines, result.stderr_lines) == (["nobody", "x"], ["done"])
    sleeper = conn.async_run("sleep 30", become_user="nobody")
    sleeper.send_signal(signal.SIGTERM)  # kill as nobody, like the command
    assert sleeper.wait(raise_on_error=False).rc == 143


def test_compat_conn__with_block_waits_and_raises_on_error(conn: HostConnection, tmp_path: Path) -> None:
    done = tmp_path / "done"
    with conn.async_run(f"sleep 0.3; touch {done}") as process:
        assert not done.exists()
    assert done.exists()
    assert not process.in_progress
    with pytest.raises(ProcessError) as info, conn.async_run("echo out; echo err >&2; exit 3"):
        pass
    assert (info.value.rc, info.value.stdout_lines, info.value.stderr_lines) == (3, ["out"], ["err"])


def test_compat_conn__wait_raises_on_error_unless_told_not_to(conn: HostConnection) -> None:
    result = conn.async_run("exit 4").wait(raise_on_error=False)
    assert result.rc == 4
    with pytest.raises(ProcessError) as info:
        result.throw()
    assert isinstance(info.value, pytest_mh_ansible.ProcessError)
    assert f"Command #{info.value.id} exited with return code 4" in str(info.value)
    with pytest.raises(ProcessError, match="exited with return code 5"):
        conn.async_run("exit 5").wait()


def test_compat_conn__timeout_stops_the_command_and_keeps_its_output(conn: HostConnection, tmp_path: Path) -> None:
    started = time.monotonic()
    process = conn.async_run(f"echo partial; sleep 10; touch {tmp_path / 'late'}")
    with pytest.raises(ProcessTimeoutError) as info:
        process.wait(timeout=1)
    assert time.monotonic() - started < 6
    err = info.value
    assert (err.timeout, err.stdout_lines) == (1, ["partial"])
    assert isinstance(err, pytest_mh_ansible.ProcessTimeoutError)
    assert not process.in_progress
    time.sleep(0.2)
    assert not (tmp_path / "late").exists()


def test_compat_conn__the_connection_timeout_is_the_default_of_wait(conn: HostConnection) -> None:
    conn.timeout = 0.5
    with pytest.raises(ProcessTimeoutError, match=r"timed out after 0\.5 seconds"):
        conn.async_run("sleep 10").wait()
    with pytest.raises(ProcessTimeoutError):
        conn.run("sleep 10")
    assert conn.async_run("sleep 1").wait(timeout=0).rc == 0  # 0: no limit


def test_compat_conn__disconnect_kills_processes_still_running(conn: HostConnection, tmp_path: Path) -> None:
    process = conn.async_run(f"echo up; sleep 5; touch {tmp_path / 'late'}")
    assert next(process.stdout) == "up"
    conn.disconnect()
    assert not process.in_progress
    time.sleep(0.2)
    assert conn.run(f"pgrep -f '[t]ouch {tmp_path}'", raise_on_error=False).rc == 1


def test_compat_conn__unified_newlines_drop_carriage_returns(conn: HostConnection) -> None:
    assert conn.async_run(r"printf 'a\r\nb\r\n'", unified_newlines=True).wait().stdout_lines == ["a", "b"]
    assert conn.async_run(r"printf 'a\r\n'").wait().stdout_lines == ["a\r"]


def test_compat_conn__create_process_makes_a_process_that_runs_on_run(conn: HostConnection) -> None:
    process = conn.create_process(
        command="  echo $X\n", env={"X": 1}, log_level=ProcessLogLevel.Short, blocking_call=False
    )
    assert not process.in_progress
    assert (process.command, process.env, process.blocking_call) == ("echo $X", {"X": 1}, False)
    assert process.full_command_line == "/usr/bin/env bash -c 'export X=1\n\necho $X'"
    with pytest.raises(RuntimeError, match="not running"):
        process.wait()
    assert process.run() is process
    assert process.wait().stdout == "1"
    # blocking_call only changes the log, as in pytest-mh: the process is live all the same.
    blocking = conn.create_process(command="cat", log_level=ProcessLogLevel.Full, blocking_call=True).run()
    blocking.stdin.write("live\n")
    assert next(blocking.stdout) == "live"
    assert blocking.wait().stdout == "live"


def test_compat_conn__silent_commands_log_nothing(conn: HostConnection, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="pytest_mh_ansible.compat")
    conn.run("echo secret-output", log_level=ProcessLogLevel.Silent)
    conn.async_run("echo secret-async", log_level=ProcessLogLevel.Silent).wait()
    conn.run("exit 3", log_level=ProcessLogLevel.Silent, raise_on_error=False)
    assert [r for r in caplog.records if r.name.startswith("pytest_mh_ansible.compat")] == []
    conn.run("echo shown-output")
    assert "shown-output" in caplog.text


def test_compat_conn__short_and_error_levels_log_as_pytest_mh(
    conn: HostConnection, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pytest_mh_ansible.compat")
    conn.run("echo short-output", log_level=ProcessLogLevel.Short)
    assert "echo short-output" in caplog.text
    assert "Output: short-output" not in caplog.text
    caplog.clear()
    conn.run("echo fine", log_level=ProcessLogLevel.Error)
    assert caplog.text == ""
    conn.run("echo bad; exit 2", log_level=ProcessLogLevel.Error, raise_on_error=False)
    assert "completed with exit code 2" in caplog.text
    assert "bad" in caplog.text


def test_compat_conn__host_connection_from_confdict_and_context_manager(conn: HostConnection) -> None:
    class Host:
        name = hostname = "localhost"
        shell = Bash()

        def __init__(self, connection: HostConnection) -> None:
            self.conn = connection
            self.logger = connection.logger

    made = HostConnection.from_confdict(Host(conn), {"timeout": 12})
    assert (made.ansible, made.timeout, made.host) == (conn.ansible, 12, "localhost")
    assert not made.connected
    made.run("true")  # the first command connects, as in pytest-mh
    assert made.connected
    made.disconnect()
    with made as opened:
        assert opened is made
        assert made.connected
        assert made.exec(["echo", "ok"]).stdout == "ok"
    assert not made.connected


# --- the base contract, as a connection of one's own implements it ----------------------------------


class _Buffer(ProcessInputBuffer):
    def __init__(self) -> None:
        self.data = b""

    def write(self, data: str | bytes) -> None:
        self.data += data.encode() if isinstance(data, str) else data


class _MyTimeout(ProcessTimeoutError):
    pass


class _BlockingProcess(Process[ProcessResult[ProcessError], _Buffer, _MyTimeout]):
    """A process whose _wait blocks until _close: what the timeout watchdog must end."""

    timeout_error_class = _MyTimeout

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.closed = threading.Event()
        self.buffer = _Buffer()
        self.started = False

    @property
    def in_progress(self) -> bool:
        return self.started and not self.closed.is_set()

    @property
    def stdout(self) -> Generator[str, None, None]:
        yield from ()

    @property
    def stderr(self) -> Generator[str, None, None]:
        yield from ()

    @property
    def stdin(self) -> _Buffer:
        return self.buffer

    def _run(self) -> None:
        self.started = True

    def _wait(self) -> ProcessResult[ProcessError]:
        self.closed.wait(30)
        error = ProcessError(-1, self.id, self.command, self.cwd, self.env, self.input, ["so far"], [])
        return ProcessResult(-1, ["so far"], [], error)

    def send_eof(self) -> None:
        pass

    def send_signal(self, sig: signal.Signals) -> None:
        pass

    def _close(self) -> None:
        self.closed.set()


class _MyConnection(Connection[_BlockingProcess, ProcessResult[ProcessError]]):
    @property
    def connected(self) -> bool:
        return True

    def connect(self) -> None:
        pass

    def disconnect(self) -> None:
        pass

    def create_process(
        self,
        *,
        command: str,
        cwd: str | None = None,
        env: dict[str, Any] | None = None,
        input: str | bytes | None = None,
        log_level: ProcessLogLevel,
        blocking_call: bool,
        unified_newlines: bool = False,
    ) -> _BlockingProcess:
        return _BlockingProcess(
            command=command, cwd=cwd, env=env, input=input, shell=self.shell, logger=self.logger,
            log_level=log_level, timeout=self.timeout, blocking_call=blocking_call,
        )  # fmt: skip

    @classmethod
    def from_confdict(cls, host: Any, confdict: dict[str, Any]) -> _MyConnection:
        return cls(shell=Bash(), logger=host.logger, timeout=confdict.get("timeout", 300))


def test_compat_conn__the_watchdog_closes_a_process_and_raises_its_own_timeout_error() -> None:
    connection = _MyConnection(shell=Bash(), logger=logging.getLogger("test"), timeout=0.3)  # type: ignore[arg-type]
    started = time.monotonic()
    with pytest.raises(_MyTimeout) as info:
        connection.run("anything")
    assert time.monotonic() - started < 5
    assert (info.value.timeout, info.value.stdout_lines, info.value.command) == (0.3, ["so far"], "anything")


def test_compat_conn__connection_and_process_are_abstract_as_in_pytest_mh() -> None:
    with pytest.raises(TypeError, match="abstract"):
        Connection(shell=Bash(), logger=logging.getLogger("test"))  # type: ignore[abstract,arg-type]
    with pytest.raises(TypeError, match="abstract"):
        Process(command="x", shell=Bash(), logger=None, log_level=ProcessLogLevel.Full, timeout=0, blocking_call=True)  # type: ignore[abstract,arg-type]
    assert issubclass(ContainerConnectionError, ConnectionError)


def test_compat_conn__errors_and_results_take_pytest_mh_arguments() -> None:
    error = ProcessError(2, 9, "false", None, {}, None, ["a", "b"], ["c"])
    assert (error.stdout, error.stderr, error.stdout_lines, error.message) == (
        "a\nb",
        "c",
        ["a", "b"],
        "exited with return code 2",
    )
    assert str(error).splitlines() == [
        "Command #9 exited with return code 2", "Command: false", "Output:", "    a", "    b", "Error output:", "    c",
    ]  # fmt: skip
    result = ProcessResult(2, ["a", "b"], ["c"], error)
    assert (result.stdout, result.stderr_lines, result.rc) == ("a\nb", ["c"], 2)
    with pytest.raises(ProcessError):
        result.throw()
    assert ProcessResult(0, "x\ny\n", "", error).stdout_lines == ["x", "y"]  # this layer's text form too


# --- containers, with a stand-in engine ----------------------------------------------------------------

_STANDIN = """#!/bin/sh
# A stand-in for podman: "exec --interactive [--user USER] NAME COMMAND..." runs COMMAND here.
echo "$*" >> "$STANDIN_LOG"
[ "$1" = exec ] || exit 125
shift
while :; do
  case "$1" in
    -i|--interactive) shift ;;
    -u|--user) shift 2 ;;
    *) break ;;
  esac
done
[ "$1" = box ] || { echo "Error: no container with name or ID \\"$1\\" found" >&2; exit 125; }
shift
exec "$@"
"""


@pytest.fixture
def engine_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``podman`` on PATH is a stand-in that runs commands here (no container engine runs on CI machines)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    engine = bin_dir / "podman"
    engine.write_text(_STANDIN)
    engine.chmod(engine.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "engine.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_LOG", str(log))
    return log


def test_compat_conn__container_client_runs_commands_through_engine_exec(engine_log: Path) -> None:
    with ContainerClient("podman", "box", user="user1", shell=Bash(), logger=logging.getLogger("c"), timeout=10) as box:  # type: ignore[arg-type]
        assert box.connected
        result = box.run("echo $X; echo err >&2", env={"X": "it's"})
        assert (result.rc, result.stdout, result.stderr) == (0, "it's", "err")
        assert box.exec(["printf", "%s", "a b"]).stdout == "a b"
        with pytest.raises(ContainerProcessError) as info:
            box.run("exit 3")
        assert info.value.rc == 3
    calls = engine_log.read_text().splitlines()
    assert calls[0] == "exec --interactive --user user1 box /usr/bin/env bash -c exit 0"  # connect's check
    assert calls[1].startswith("exec --interactive --user user1 box /usr/bin/env bash -c export X=")


def test_compat_conn__container_process_is_live_and_signals_reach_it(engine_log: Path) -> None:
    box = ContainerClient("podman", "box", user="root", shell=Bash(), logger=logging.getLogger("c"))  # type: ignore[arg-type]
    process = box.async_run("cat")
    process.stdin.write("ping\n")
    assert next(process.stdout) == "ping"
    process.send_eof()
    assert process.wait().stdout == "ping"
    process = box.async_run("sleep 30")
    process.send_signal(signal.SIGTERM)
    assert process.wait(raise_on_error=False).rc == -signal.SIGTERM
    with pytest.raises(ContainerProcessTimeoutError):
        box.async_run("sleep 30").wait(timeout=0.5)


def test_compat_conn__container_that_does_not_answer_is_a_connection_error(engine_log: Path) -> None:
    client = ContainerClient("podman", "nope", user="root", shell=Bash(), logger=logging.getLogger("c"))  # type: ignore[arg-type]
    with pytest.raises(ContainerConnectionError, match="'nope'"):
        client.connect()
    assert not client.connected
    with pytest.raises(ValueError, match="expected one of podman, docker"):
        ContainerClient("lxc", "box", user="root", shell=Bash(), logger=logging.getLogger("c"))  # type: ignore[arg-type]


def test_compat_conn__container_client_from_confdict_and_sudo_command_line() -> None:
    class Host:
        hostname = "ipa"
        shell = Bash()
        logger = logging.getLogger("host")

    client = ContainerClient.from_confdict(
        Host(), {"type": "docker", "container": "ipa", "sudo": True, "sudo_password": "pw"}
    )
    assert (client.engine, client.container_name, client.user, client.sudo, client.timeout) == (
        "docker",
        "ipa",
        "root",
        True,
        300,
    )
    assert client._argv("/usr/bin/env bash -c 'id -u'") == [
        "sudo", "-k", "-S", "-p", "", "docker", "exec", "--interactive", "--user", "root", "ipa",
        "/usr/bin/env", "bash", "-c", "id -u",
    ]  # fmt: skip
    client.sudo_password = None
    assert client._argv("true")[:2] == ["sudo", "-n"]
    with pytest.raises(ValueError, match=r"conn\.container is not set"):
        ContainerClient.from_confdict(Host(), {"type": "podman"})
