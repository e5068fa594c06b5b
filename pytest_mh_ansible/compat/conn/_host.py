"""The connection of a compatibility host: pytest-mh's ``Connection`` over the host's Ansible connection."""

from __future__ import annotations

import signal
import weakref
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, Self, TypedDict, runtime_checkable

from ... import Connection as AnsibleConnection
from ... import MultihostError
from ...errors import ProcessTimeoutError as _ProjectProcessTimeoutError
from ..logger import MultihostLogger, logger_for
from ._connection import Connection
from ._process import Process, ProcessError, ProcessLogLevel, ProcessResult, ProcessTimeoutError
from ._shell import Bash, Shell
from ._ssh_errors import SSHProcessError, SSHProcessTimeoutError
from ._streams import OutputLines, WriterInput

if TYPE_CHECKING:
    import os

__all__ = ["DEFAULT_TIMEOUT", "ExecOptions", "HostConnection", "HostProcess", "LiveCommand", "compat_conn"]

DEFAULT_TIMEOUT: float | None = None
"""No per-command time limit unless one is given: pytest-mh's default of 300 s is not enforced.

Enforcing a limit costs a watcher thread on the controller and a ``timeout`` process on the host
for every command (about 35 ms each on a busy machine, a third of the compat suite's wall time).
A host's ``mh_command_timeout`` variable (``convert-mhc`` writes it from ``conn.timeout``) sets a
default; ``--mh-timeout`` limits whole tests.
"""


@runtime_checkable
class LiveCommand(Protocol):
    """A command running on a host with open streams (what ``AnsibleTransport.open_process`` returns)."""

    def write(self, data: bytes) -> None: ...

    def close_stdin(self) -> None: ...

    def read_stdout(self) -> bytes: ...

    def read_stderr(self) -> bytes: ...

    def wait(self) -> int: ...

    def signal(self, sig: signal.Signals) -> None: ...

    def kill(self) -> None: ...


class _ProcessOpener(Protocol):
    def __call__(self, command: str, *, become: bool | None, become_user: str | None) -> LiveCommand: ...


class ExecOptions(TypedDict, total=False):
    """The keywords of pytest-mh's ``exec``: those of :meth:`HostConnection.run` but the shell's."""

    cwd: str | None
    env: dict[str, Any] | None
    input: str | None
    log_level: ProcessLogLevel
    raise_on_error: bool
    timeout: int | None


class HostProcess(Process[ProcessResult[ProcessError], WriterInput, ProcessTimeoutError]):
    """A command of a compatibility host: live over the host's Ansible connection, or run at once.

    ``async_run`` gives a live one: its script runs on a channel of the host's own connection
    (the ssh plugin's ControlMaster, the paramiko plugin's client, a local subprocess), with
    stdin, stdout and stderr open while it runs, and ``send_signal`` delivered with ``kill`` on
    the host to the command's process group. :meth:`HostConnection.run` marks its process
    ``at_once``: started, it runs the whole command through this project's transport (its fastest
    path), and waiting only hands the result over.
    """

    timeout_error_class = SSHProcessTimeoutError

    def __init__(
        self,
        *,
        connection: HostConnection,
        unified_newlines: bool = False,
        become: bool | None = None,
        become_user: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(shell=connection.shell, logger=connection.logger, **options)
        self.host_name = connection.host
        self._connection = connection
        self._unified = unified_newlines
        self._become = become
        self._become_user = become_user
        self._live: LiveCommand | None = None
        self._finished: ProcessResult[ProcessError] | ProcessTimeoutError | None = None
        self._stdin: WriterInput | None = None
        self._stdout: OutputLines | None = None
        self._stderr: OutputLines | None = None
        self._open = False
        self.at_once = False

    # -- streams ---------------------------------------------------------------------------------
    @property
    def in_progress(self) -> bool:
        return self._open

    def _running(self, what: str) -> LiveCommand:
        if not self._open or self._live is None:
            raise RuntimeError(f"{what} of command #{self.id}, which is not running")
        return self._live

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
    def stdin(self) -> WriterInput:
        self._running("stdin")
        assert self._stdin is not None
        return self._stdin

    # -- life ------------------------------------------------------------------------------------
    def _run(self) -> None:
        if self.at_once:
            self._finished = self._connection._run_at_once(self, self._become, self._become_user, self._unified)
            self._open = True
            return
        live = self._connection._open_process(self.full_command_line, self._become, self._become_user)
        self._connection._live_processes.add(self)
        self._live = live
        self._stdin = WriterInput(live.write, live.close_stdin)
        self._stdout = OutputLines(live.read_stdout, unified_newlines=self._unified, name=f"stdout-{self.id}")
        self._stderr = OutputLines(live.read_stderr, unified_newlines=self._unified, name=f"stderr-{self.id}")
        self._open = True
        if self.input is not None:
            try:
                self._stdin.write(self.input)
            except Exception:
                self._close()
                raise

    def _wait(self) -> ProcessResult[ProcessError]:
        if self._finished is not None:
            finished, self._finished = self._finished, None
            self._open = False
            if isinstance(finished, ProcessTimeoutError):
                raise finished
            return finished
        live = self._running("wait()")
        assert self._stdin is not None
        assert self._stdout is not None
        assert self._stderr is not None
        try:
            self._stdin.close()
            self._stdout.finish()
            self._stderr.finish()
            rc = live.wait()
        finally:
            self._close()
        out, err = self._stdout.lines, self._stderr.lines
        error = SSHProcessError(
            rc, self.id, self.command, self.cwd, self.env, self.input, out, err, host=self.host_name
        )
        return ProcessResult(rc, out, err, error)

    def send_eof(self) -> None:
        self._running("send_eof()")
        assert self._stdin is not None
        self._stdin.close()

    def send_signal(self, sig: signal.Signals) -> None:
        self._running("send_signal()").signal(sig)

    def _close(self) -> None:
        live, self._open = self._live, False
        if live is not None:
            live.kill()


class HostConnection(Connection[HostProcess, ProcessResult[ProcessError]]):
    """pytest-mh's connection of a compatibility host, over this project's (Ansible) connection.

    ``run``/``exec`` go through this project's transport (the fastest path, with ``become`` and
    ``become_user`` as extras); ``async_run``/``async_exec`` start a live :class:`HostProcess`.
    Everything this project's :class:`~pytest_mh_ansible.Connection` offers (``put``, ``get``)
    stays available. ``host`` is the inventory name of the host.

    Example::

        result = client.host.conn.run("echo $BASH_VERSION", raise_on_error=False)
        with client.host.conn.async_run("cat") as process:
            process.stdin.write("hello\\n")
            assert next(process.stdout) == "hello"

    :param connection: The host's connection of this project.
    :param timeout: Default seconds per command; None or 0: no limit (see :data:`DEFAULT_TIMEOUT`).
    """

    _mh_takes_positional = True
    """``Connection(ansible_connection, shell, host=...)``, this layer's earlier call, makes one of these."""

    def __init__(
        self,
        connection: AnsibleConnection,
        shell: Shell,
        *,
        host: str,
        timeout: float | None = DEFAULT_TIMEOUT,
        logger: MultihostLogger | None = None,
        port: int = 22,
        user: str = "root",
    ) -> None:
        super().__init__(shell=shell, logger=logger or logger_for("host", host), timeout=timeout or 0)
        self.ansible = connection
        self.host = host
        self.port = port
        """The host's ssh port (``ansible_port``), as pytest-mh's :class:`SSHClient` has it."""
        self.user = user
        """The login user (``ansible_user``), as pytest-mh's :class:`SSHClient` has it."""
        self._connected = False
        self._live_processes: weakref.WeakSet[HostProcess] = weakref.WeakSet()

    @classmethod
    def from_confdict(cls, host: Any, confdict: dict[str, Any]) -> Self:
        """The connection of a compatibility ``host``; ``confdict`` may set ``timeout`` (seconds)."""
        current = host.conn
        ansible = current.ansible if isinstance(current, HostConnection) else current
        return cls(
            ansible,
            getattr(host, "shell", None) or Bash(),
            host=str(getattr(host, "hostname", host.name)),
            timeout=confdict.get("timeout", DEFAULT_TIMEOUT),
            logger=getattr(host, "logger", None),
        )

    # -- life --------------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        """Whether :meth:`connect` has run (and :meth:`disconnect` not since)."""
        return self._connected

    def connect(self) -> None:
        if not self._connected:
            self.ansible.connect()
            self._connected = True

    def disconnect(self) -> None:
        """Close the connection; its live processes that still run are killed first (as an ssh session ends)."""
        for process in list(self._live_processes):
            process._close()
        self.ansible.close()
        self._connected = False

    def close(self) -> None:
        """:meth:`disconnect`, by this project's name."""
        self.disconnect()

    # -- commands ----------------------------------------------------------------------------------
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
        become: bool | None = None,
        become_user: str | None = None,
    ) -> HostProcess:
        return HostProcess(
            connection=self,
            command=command,
            cwd=cwd,
            env=env,
            input=input,
            log_level=log_level,
            timeout=self.timeout,
            blocking_call=blocking_call,
            unified_newlines=unified_newlines,
            become=become,
            become_user=become_user,
        )

    def run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, Any] | None = None,
        input: str | bytes | None = None,
        log_level: ProcessLogLevel = ProcessLogLevel.Full,
        raise_on_error: bool = True,
        timeout: int | float | None = None,
        unified_newlines: bool = False,
        become: bool | None = None,
        become_user: str | None = None,
    ) -> ProcessResult[ProcessError]:
        """Run a script on the host and wait for it (pytest-mh's ``run``; ``become``/``become_user`` are extras).

        :raises ProcessError: A non-zero exit code with ``raise_on_error``.
        :raises ProcessTimeoutError: The script overran ``timeout`` (else the host's ``mh_command_timeout``).
        """
        __tracebackhide__ = True
        if not isinstance(command, str):
            raise ValueError(f"{self.host}: run() takes a string, got {command!r}: did you mean exec()?")
        self.connect()
        process = self.create_process(
            command=command,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            input=input,
            log_level=log_level,
            blocking_call=True,
            unified_newlines=unified_newlines,
            become=become,
            become_user=become_user,
        )
        if timeout is not None:
            process.timeout = timeout
        process.at_once = True
        process.run()
        return process.wait(raise_on_error=raise_on_error, timeout=0)

    def async_run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: dict[str, Any] | None = None,
        input: str | bytes | None = None,
        log_level: ProcessLogLevel = ProcessLogLevel.Full,
        unified_newlines: bool = False,
        become: bool | None = None,
        become_user: str | None = None,
    ) -> HostProcess:
        """Start a script on the host and return its live process (``become``/``become_user`` are extras)."""
        if not isinstance(command, str):
            raise ValueError(f"{self.host}: async_run() takes a string, got {command!r}: did you mean async_exec()?")
        self.connect()
        process = self.create_process(
            command=command,
            cwd=cwd,
            env=env,
            input=input,
            log_level=log_level,
            blocking_call=False,
            unified_newlines=unified_newlines,
            become=become,
            become_user=become_user,
        )
        return process.run()

    def _run_at_once(
        self, process: HostProcess, become: bool | None, become_user: str | None, unified_newlines: bool
    ) -> ProcessResult[ProcessError] | ProcessTimeoutError:
        """The blocking path: the whole command through this project's transport."""
        limit = process.timeout
        where = (process.id, process.command, process.cwd, process.env, process.input)
        try:
            raw = self.ansible.run(
                process.full_command_line,
                input=process.input,
                timeout=limit or None,
                raise_on_error=False,
                become=become,
                become_user=become_user,
                silent=process.log_level is ProcessLogLevel.Silent,
            )
        except _ProjectProcessTimeoutError as err:
            return SSHProcessTimeoutError(err.timeout, *where, err.stdout, err.stderr, host=self.host)
        stdout, stderr = raw.stdout, raw.stderr
        if unified_newlines:
            stdout, stderr = stdout.replace("\r\n", "\n"), stderr.replace("\r\n", "\n")
        error = SSHProcessError(raw.rc, *where, stdout, stderr, host=self.host)
        return ProcessResult(raw.rc, stdout, stderr, error)

    def _open_process(self, command: str, become: bool | None, become_user: str | None) -> LiveCommand:
        """A live command on the host's connection, from its transport's ``open_process``."""
        opener: _ProcessOpener | None = getattr(getattr(self.ansible, "_transport", None), "open_process", None)
        if opener is None:
            raise MultihostError(f"{self.host}: this host's transport cannot run live processes (async_run)")
        return opener(command, become=become, become_user=become_user)

    # -- this project's connection API, for code written against it ---------------------------------
    def put(self, local: str | os.PathLike[str], remote: str) -> None:
        """Copy a controller file to the host."""
        self.ansible.put(local, remote)

    def get(self, remote: str, local: str | os.PathLike[str]) -> None:
        """Copy a file from the host to the controller."""
        self.ansible.get(remote, local)


def compat_conn(host: Any) -> HostConnection:
    """``host.conn`` with pytest-mh's API: the compatibility host's own, or a wrapper for any other host."""
    conn = host.conn
    if isinstance(conn, HostConnection):
        return conn
    return HostConnection(conn, Bash(), host=str(host.name))
