"""``pytest_mh.conn.container``: commands in a podman or docker container, through the engine's ``exec``."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from collections.abc import Generator
from typing import IO, Any, Self

from ..logger import MultihostLogger, logger_for
from ._connection import Connection, ConnectionError
from ._process import Process, ProcessError, ProcessInputBuffer, ProcessLogLevel, ProcessResult, ProcessTimeoutError
from ._shell import Bash, Shell
from ._streams import OutputLines

__all__ = [
    "ContainerClient",
    "ContainerConnectionError",
    "ContainerInputBuffer",
    "ContainerProcess",
    "ContainerProcessError",
    "ContainerProcessResult",
    "ContainerProcessTimeoutError",
]

ENGINES = ("podman", "docker")
"""The container engines pytest-mh knows; the command of that name (found on ``PATH``) is run."""


class ContainerInputBuffer(ProcessInputBuffer):
    """The standard input of a command in a container: the engine client's stdin ``pipe``."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self.pipe = pipe

    def write(self, data: str | bytes) -> None:
        self.pipe.write(data.encode() if isinstance(data, str) else data)
        self.pipe.flush()

    def flush(self) -> None:
        """Nothing left to send: :meth:`write` flushes."""
        self.pipe.flush()

    def close(self) -> None:
        """Send EOF."""
        with contextlib.suppress(OSError):
            self.pipe.close()


class ContainerProcessError(ProcessError):
    """A command in a container exited with a non-zero code."""


class ContainerProcessTimeoutError(ProcessTimeoutError):
    """A command in a container ran out of time; the engine client was killed."""


class ContainerProcessResult(ProcessResult[ContainerProcessError]):
    """The result of a command in a container."""


class ContainerProcess(Process[ContainerProcessResult, ContainerInputBuffer, ContainerProcessTimeoutError]):
    """A command in a container: ``<engine> exec --interactive --user USER NAME <shell command line>``.

    The engine client runs on the controller with its stdin, stdout and stderr as the command's;
    :meth:`send_signal` signals that client (as pytest-mh does), which forwards it as the engine does.
    """

    timeout_error_class = ContainerProcessTimeoutError

    def __init__(
        self,
        *,
        command: str,
        cwd: str | None = None,
        env: dict[str, Any] | None = None,
        input: str | bytes | None = None,
        shell: Shell,
        logger: MultihostLogger,
        log_level: ProcessLogLevel,
        timeout: int | float,
        blocking_call: bool,
        client: ContainerClient,
    ) -> None:
        super().__init__(
            command=command,
            cwd=cwd,
            env=env,
            input=input,
            shell=shell,
            logger=logger,
            log_level=log_level,
            timeout=timeout,
            blocking_call=blocking_call,
            additional_log_data={"Engine": client.engine, "Container": client.container_name, "User": client.user},
        )
        self.host_name = client.container_name
        self._client = client
        self._popen: subprocess.Popen[bytes] | None = None
        self._stdin: ContainerInputBuffer | None = None
        self._stdout: OutputLines | None = None
        self._stderr: OutputLines | None = None

    @property
    def in_progress(self) -> bool:
        return self._popen is not None

    def _running(self, what: str) -> subprocess.Popen[bytes]:
        if self._popen is None:
            raise RuntimeError(f"{what} of command #{self.id}, which is not running")
        return self._popen

    @property
    def stdout(self) -> Generator[str, None, None]:
        self._running("stdout")
        assert self._stdout is not None
        return self._stdout

    @property
    def stderr(self) -> Generator[str, None, None]:
        self._running("stderr")
        assert self._stderr is not None
        return self._stderr

    @property
    def stdin(self) -> ContainerInputBuffer:
        self._running("stdin")
        assert self._stdin is not None
        return self._stdin

    def _run(self) -> None:
        client = self._client
        popen = subprocess.Popen(
            client._argv(self.full_command_line),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert popen.stdin is not None
        assert popen.stdout is not None
        assert popen.stderr is not None
        pipe_out, pipe_err = popen.stdout, popen.stderr
        self._popen = popen
        self._stdin = ContainerInputBuffer(popen.stdin)
        self._stdout = OutputLines(lambda: os.read(pipe_out.fileno(), 65536), name=f"stdout-{self.id}")
        self._stderr = OutputLines(lambda: os.read(pipe_err.fileno(), 65536), name=f"stderr-{self.id}")
        try:
            if client.sudo and client.sudo_password is not None:
                self._stdin.write(f"{client.sudo_password}\n")
            if self.input is not None:
                self._stdin.write(self.input)
        except Exception:
            self._close()
            raise

    def _wait(self) -> ContainerProcessResult:
        popen = self._running("wait()")
        assert self._stdin is not None
        assert self._stdout is not None
        assert self._stderr is not None
        try:
            self._stdin.close()
            self._stdout.finish()
            self._stderr.finish()
            rc = popen.wait()
        finally:
            self._close()
        out, err = self._stdout.lines, self._stderr.lines
        error = ContainerProcessError(
            rc, self.id, self.command, self.cwd, self.env, self.input, out, err, host=self.host_name
        )
        return ContainerProcessResult(rc, out, err, error)

    def send_eof(self) -> None:
        self._running("send_eof()")
        assert self._stdin is not None
        self._stdin.close()

    def send_signal(self, sig: signal.Signals) -> None:
        self._running("send_signal()").send_signal(sig)

    def _close(self) -> None:
        popen, self._popen = self._popen, None
        if popen is None:
            return
        if popen.poll() is None:
            popen.kill()
        popen.wait()
        for pipe in (popen.stdin, popen.stdout, popen.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


class ContainerConnectionError(ConnectionError):
    """The container cannot be reached with its engine (not running, no such container or user)."""

    def __init__(self, engine: str, container_name: str, *, user: str, sudo: bool) -> None:
        super().__init__(f"cannot run commands in {engine} container {container_name!r} (user={user}, sudo={sudo})")
        self.engine = engine
        self.container_name = container_name
        self.user = user
        self.sudo = sudo


class ContainerClient(Connection[ContainerProcess, ContainerProcessResult]):
    """Commands in a podman or docker container: pytest-mh's ``ContainerClient``.

    Each command runs as ``<engine> exec --interactive --user USER NAME <command line>`` in a
    subprocess of the controller (under ``sudo`` with ``sudo=True``: ``-S`` with
    ``sudo_password``, else ``-n``). :meth:`connect` checks that ``exit 0`` runs there.

    Example::

        with ContainerClient("podman", "ipa", user="root", shell=Bash(), logger=logger) as container:
            assert container.run("cat /etc/hostname").stdout == "ipa.test"

    A host whose ``conn`` in pytest-mh's config has ``type: podman`` (or ``docker``) and
    ``container: NAME`` gets one through :meth:`from_confdict`.

    :raises ValueError: ``engine`` is neither ``podman`` nor ``docker``.
    """

    def __init__(
        self,
        engine: str,
        container_name: str,
        *,
        user: str,
        sudo: bool = False,
        sudo_password: str | None = None,
        shell: Shell | None = None,
        logger: MultihostLogger | None = None,
        timeout: int | float = 300,
    ) -> None:
        if engine not in ENGINES:
            raise ValueError(f"container engine {engine!r}: expected one of {', '.join(ENGINES)}")
        super().__init__(
            shell=shell or Bash(), logger=logger or logger_for("container", container_name), timeout=timeout
        )
        self.engine = engine
        self.container_name = container_name
        self.user = user
        self.sudo = sudo
        self.sudo_password = sudo_password
        self._connected = False

    def _argv(self, command_line: str) -> list[str]:
        """The controller's command that runs ``command_line`` (the shell's) in the container."""
        argv = [self.engine, "exec", "--interactive"]
        if self.user:
            argv += ["--user", self.user]
        argv += [self.container_name, *shlex.split(command_line)]
        if self.sudo:
            prefix = ["sudo", "-k", "-S", "-p", ""] if self.sudo_password is not None else ["sudo", "-n"]
            argv = [*prefix, *argv]
        return argv

    @property
    def connected(self) -> bool:
        return self._connected

    def connect(self) -> None:
        """Check that the container runs commands (``exit 0``).

        :raises ContainerConnectionError: It does not.
        """
        if self._connected:
            return
        self._connected = True  # run() below connects first
        try:
            result = self.run("exit 0", raise_on_error=False, log_level=ProcessLogLevel.Error)
        except (OSError, ProcessError):
            result = None
        if result is None or result.rc != 0:
            self._connected = False
            raise ContainerConnectionError(self.engine, self.container_name, user=self.user, sudo=self.sudo)

    def disconnect(self) -> None:
        self._connected = False

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
    ) -> ContainerProcess:
        return ContainerProcess(
            command=command,
            cwd=cwd,
            env=env,
            input=input,
            shell=self.shell,
            logger=self.logger,
            log_level=log_level,
            timeout=self.timeout,
            blocking_call=blocking_call,
            client=self,
        )

    @classmethod
    def from_confdict(cls, host: Any, confdict: dict[str, Any]) -> Self:
        """The client of pytest-mh's ``conn`` section: ``type`` (the engine), ``container``, ``user``
        (root), ``sudo``, ``sudo_password``, ``timeout`` (300).

        :raises ValueError: No ``container`` is named.
        """
        container = confdict.get("container")
        if not container:
            raise ValueError(f"{getattr(host, 'hostname', host)}: conn.container is not set")
        return cls(
            str(confdict.get("type", "podman")),
            str(container),
            user=str(confdict.get("user", "root")),
            sudo=bool(confdict.get("sudo", False)),
            sudo_password=confdict.get("sudo_password"),
            shell=getattr(host, "shell", None),
            logger=getattr(host, "logger", None),
            timeout=confdict.get("timeout", 300),
        )
