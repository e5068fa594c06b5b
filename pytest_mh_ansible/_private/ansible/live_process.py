"""Commands that keep running on a host while a test talks to them: open stdin, stdout and stderr, signals.

``AnsibleTransport.open_process`` starts one on the host's own connection plugin: a second
session over the ssh plugin's ControlMaster, a new channel of the paramiko plugin's client, or a
subprocess for ``local``. The command runs under a small bash wrapper that starts it as a job of
its own (``set -m``: a process group, SIGINT not ignored) and first prints a marker with its pid
on stderr; signals are then sent with ``kill`` to that process group through an ordinary command,
because an ssh channel's ``signal`` request is not delivered by every server.

Example::

    live = transport.open_process("/usr/bin/env bash -c 'cat'")
    live.write(b"hello\\n")
    live.close_stdin()
    live.read_stdout()  # b"hello\\n" (then b"" at the end)
    live.wait()  # 0
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from ...errors import HostUnreachableError, ProcessError
from . import compat

__all__ = ["LiveProcess", "start"]

_STARTUP_TIMEOUT = 30.0
"""Seconds a command may take to report its pid (login, become) before it is given up."""

_WRAPPER = """exec 3>&2 2>/dev/null
set -m
( printf '%s %s\\n' {marker} "$BASHPID" >&2; exec {command} ) 2>&3 3>&- &
wait "$!"
"""
"""Run the command as a job with its own process group; stderr 3 is the command's, bash's own notices go nowhere."""

Control = Callable[[str], object]
"""Runs a short command on the host (as the process' user): how signals are sent."""


class _Channel(Protocol):
    def write(self, data: bytes) -> None: ...

    def close_stdin(self) -> None: ...

    def read_out(self) -> bytes: ...

    def read_err(self) -> bytes: ...

    def wait(self) -> int: ...

    def close(self) -> None: ...


class _PopenChannel:
    """A local subprocess: the command itself (``local``) or an ssh client multiplexed on the master (``ssh``)."""

    def __init__(self, argv: list[str] | list[bytes], pass_fds: tuple[int, ...] = ()) -> None:
        self._proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=pass_fds
        )
        assert self._proc.stdin is not None
        assert self._proc.stdout is not None
        assert self._proc.stderr is not None
        self._stdin, self._stdout, self._stderr = self._proc.stdin, self._proc.stdout, self._proc.stderr

    def write(self, data: bytes) -> None:
        self._stdin.write(data)
        self._stdin.flush()

    def close_stdin(self) -> None:
        with contextlib.suppress(OSError):
            self._stdin.close()

    def read_out(self) -> bytes:
        return os.read(self._stdout.fileno(), 65536)

    def read_err(self) -> bytes:
        return os.read(self._stderr.fileno(), 65536)

    def wait(self) -> int:
        return self._proc.wait()

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        for pipe in (self._stdin, self._stdout, self._stderr):
            with contextlib.suppress(OSError):
                pipe.close()


class _ParamikoChannel:
    """A new session channel on the paramiko plugin's open client."""

    def __init__(self, client: Any, command: str) -> None:
        transport = client.get_transport()
        if transport is None or not transport.is_active():
            raise HostUnreachableError("paramiko", "the paramiko connection is closed")
        self._chan = transport.open_session()
        self._chan.exec_command(command)

    def write(self, data: bytes) -> None:
        self._chan.sendall(data)

    def close_stdin(self) -> None:
        with contextlib.suppress(OSError, EOFError):
            self._chan.shutdown_write()

    def read_out(self) -> bytes:
        return bytes(self._chan.recv(65536))

    def read_err(self) -> bytes:
        return bytes(self._chan.recv_stderr(65536))

    def wait(self) -> int:
        return int(self._chan.recv_exit_status())

    def close(self) -> None:
        self._chan.close()


class LiveProcess:
    """A command running on a host: write its stdin, read its output as it comes, signal it, wait for it.

    Made by :func:`start`; the command has already reported its pid (so it runs, as the right user).
    ``read_stdout``/``read_stderr`` return the next chunk, ``b""`` at the end; call each from one
    thread only.
    """

    def __init__(
        self, host: str, channel: _Channel, pid: int, control: Control, *, err_rest: bytes, success: str
    ) -> None:
        self.host = host
        self.pid = pid
        self._channel = channel
        self._control = control
        self._err_rest = err_rest
        self._success = success.encode() if success else b""
        self._out_head = b""
        self._exit: int | None = None
        self._killed = False
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        self._channel.write(data)

    def close_stdin(self) -> None:
        self._channel.close_stdin()

    def read_stdout(self) -> bytes:
        if not self._success:
            return self._channel.read_out()
        # The become shell's success line comes first on stdout: hold the first line back to drop it.
        while b"\n" not in self._out_head:
            chunk = self._channel.read_out()
            if not chunk:
                break
            self._out_head += chunk
        first, newline, rest = self._out_head.partition(b"\n")
        dropped = self._success in first
        self._success, self._out_head = b"", b""
        if dropped:
            return rest or self._channel.read_out()
        return first + newline + rest

    def read_stderr(self) -> bytes:
        if self._err_rest:
            rest, self._err_rest = self._err_rest, b""
            return rest
        return self._channel.read_err()

    def wait(self) -> int:
        """Wait for the command to end (after its output is read) and return its exit code (128+N: signal N)."""
        code = self._channel.wait()
        self._exit = code
        return code

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the command's process group on the host (nothing when it has ended)."""
        if self._exit is None:
            self._control(f"kill -s {signal.Signals(sig).name.removeprefix('SIG')} -- -{self.pid} 2>/dev/null")

    def kill(self) -> None:
        """End the command (SIGKILL to its group on the host, if it runs) and close the channel; safe to repeat."""
        with self._lock:
            if self._killed:
                return
            self._killed = True
        if self._exit is None:
            with contextlib.suppress(Exception):
                self._control(f"kill -s KILL -- -{self.pid} 2>/dev/null")
        with contextlib.suppress(Exception):
            self._channel.close()


def wrap(command: str, marker: str) -> str:
    """``command`` under the job wrapper, as one command line for a POSIX login shell."""
    script = _WRAPPER.format(marker=marker, command=command)
    return f"/usr/bin/env bash -c {shlex.quote(script)}"


def start(host: str, conn: Any, become: Any, command: str, control: Control) -> LiveProcess:
    """Start ``command`` (a command line for the login shell) on ``conn``, the host's open connection plugin.

    Call it with the transport's lock held: the become plugin is shared.

    :param become: The become plugin to run it with, or None.
    :param control: Runs a short command as the same user (signals, the final kill).
    :raises ProcessError: The command did not start (a wrong become password, no bash on the host).
    :raises HostUnreachableError: The connection plugin cannot run live commands.
    """
    marker = f"mh-live-{uuid.uuid4().hex}"
    line = wrap(command, marker)
    success, prompt, password = "", "", None
    if become is not None:
        line = become.build_become_command(line, compat.connection_shell(conn))
        success = str(getattr(become, "success", "") or "")
        prompt = str(getattr(become, "prompt", "") or "")
        if prompt:
            password = str(become.get_option("become_pass") or "")
    channel = _open_channel(host, conn, line)
    try:
        pid, rest = _await_marker(host, channel, marker.encode(), prompt.encode(), password)
    except BaseException:
        channel.close()
        raise
    return LiveProcess(host, channel, pid, control, err_rest=rest, success=success)


def _open_channel(host: str, conn: Any, line: str) -> _Channel:
    name = compat.plugin_load_name(conn).rpartition(".")[2]
    if name == "local":
        return _PopenChannel(["/bin/sh", "-c", line])
    if name in ("paramiko", "paramiko_ssh"):
        return _ParamikoChannel(conn.ssh, line)
    if name == "ssh":
        return _ssh_channel(conn, line)
    raise HostUnreachableError(
        host, f"live processes (async_run) need an ssh, paramiko or local connection, not {name}"
    )


def _ssh_channel(conn: Any, line: str) -> _Channel:
    """An ssh client session multiplexed over the plugin's ControlMaster (started by a first command)."""
    rc, _, err = conn.exec_command("true", sudoable=False)
    if rc != 0:
        raise HostUnreachableError(str(conn.get_option("host")), err.decode(errors="replace").strip())
    host = conn.get_option("host") or compat.connection_play_context(conn).remote_addr
    argv = compat.ssh_command_line(conn, "-o", "BatchMode=yes", str(host), line)
    pipe = getattr(conn, "sshpass_pipe", None)
    try:
        return _PopenChannel(argv, pass_fds=tuple(pipe or ()))
    finally:
        if pipe:
            conn.sshpass_pipe = None
            os.close(pipe[0])
            password = conn.get_option("password") or compat.connection_play_context(conn).password
            with contextlib.suppress(OSError):
                os.write(pipe[1], f"{password}\n".encode())
            os.close(pipe[1])


def _await_marker(
    host: str, channel: _Channel, marker: bytes, prompt: bytes, password: str | None
) -> tuple[int, bytes]:
    """Read stderr until the wrapper's pid line; answer a become password prompt on the way.

    :returns: The pid and the stderr bytes that followed the marker line.
    """
    seen = bytearray()
    outcome: list[tuple[int, bytes] | BaseException] = []

    def read() -> None:
        answered = False
        try:
            while True:
                chunk = channel.read_err()
                if not chunk:
                    text = bytes(seen).decode(errors="replace")
                    raise ProcessError(host, "", -1, "", text, message=f"{host}: {_no_start(seen)}")
                seen.extend(chunk)
                at = seen.find(marker)
                end = seen.find(b"\n", at) if at >= 0 else -1
                if end >= 0:
                    pid = int(seen[at + len(marker) : end].strip())
                    outcome.append((pid, bytes(seen[end + 1 :])))
                    return
                if prompt and password is not None and not answered and prompt in seen:
                    channel.write(password.encode() + b"\n")
                    answered = True
        except BaseException as err:
            outcome.append(err)

    reader = threading.Thread(target=read, name="mh-live-start", daemon=True)
    reader.start()
    reader.join(_STARTUP_TIMEOUT)
    if reader.is_alive():
        channel.close()
        reader.join(5)
        raise ProcessError(
            host, "", -1, "", "", message=f"{host}: the command did not start within {_STARTUP_TIMEOUT:g} s"
        )
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


def _no_start(seen: bytearray) -> str:
    text = bytes(seen).decode(errors="replace").strip()
    return "the command did not start" + (f": {text}" if text else " (is bash installed on the host?)")
