"""pytest-mh's process model: log levels, errors, results and the ``Process`` base class of every connection."""

from __future__ import annotations

import itertools
import logging
import os
import signal
import textwrap
import threading
from abc import ABC, abstractmethod
from collections.abc import Generator, Mapping, Sequence
from enum import Enum, auto
from typing import TYPE_CHECKING, Any, Generic, NoReturn, Self

from ...errors import ProcessError as _ProjectProcessError
from ...errors import ProcessTimeoutError as _ProjectProcessTimeoutError

if TYPE_CHECKING:
    from types import TracebackType

    # Defaults (PEP 696) let code that names a bare ``ProcessResult`` or ``Connection`` type-check;
    # Python 3.11's TypeVar has no ``default``, so at run time the shim below drops it.
    from typing_extensions import TypeVar

    from ..logger import MultihostLogger
    from ._shell import Shell

__all__ = [
    "Process",
    "ProcessError",
    "ProcessErrorBase",
    "ProcessErrorType",
    "ProcessInputBuffer",
    "ProcessInputBufferType",
    "ProcessLogLevel",
    "ProcessResult",
    "ProcessResultType",
    "ProcessTimeoutError",
    "ProcessTimeoutErrorType",
    "ProcessType",
    "next_process_id",
]

_IDS = itertools.count(1)

if not TYPE_CHECKING:
    from typing import TypeVar as _TypeVar

    def TypeVar(name, *, bound=None, default=None):
        return _TypeVar(name, bound=bound)


def next_process_id() -> int:
    """A new command number (``#12`` in logs and errors), shared by every connection of the session."""
    return next(_IDS)


class ProcessLogLevel(Enum):
    """How much of a command the host's logger records.

    ``Silent``: nothing. ``Short``: the command and its exit code. ``Full``: also its output.
    ``Error``: the command and its output, only when it fails. ``MH_CONNECTION_DEBUG=yes`` in the
    environment makes every command ``Full``, as in pytest-mh.
    """

    Silent = auto()
    Short = auto()
    Full = auto()
    Error = auto()


class ProcessInputBuffer(ABC):
    """The standard input of a running :class:`Process`: ``process.stdin.write("data")``."""

    @abstractmethod
    def write(self, data: str | bytes) -> None:
        """Send ``data`` (text is encoded as UTF-8) to the process; :meth:`Process.send_eof` ends the input."""


def _as_lines(output: Sequence[str] | str) -> list[str]:
    """pytest-mh passes output as a list of lines; this layer used to pass text: both are accepted."""
    return output.splitlines() if isinstance(output, str) else list(output)


def _indented(value: object) -> str:
    text = "" if value is None else str(value)
    return "\n" + textwrap.indent(text, "    ") if text else ""


class ProcessErrorBase(_ProjectProcessError):
    """What every process error carries: the command, where and how it ran, and its output so far.

    It is also this project's :class:`pytest_mh_ansible.ProcessError`, so ``except`` clauses of
    either kind catch it. ``message`` is the reason ("exited with return code 3"); ``stdout`` and
    ``stderr`` are the output lines joined with ``\\n``; ``stdout_lines``/``stderr_lines`` the lines.
    """

    def __init__(  # noqa: PLR0917 - pytest-mh's positional signature
        self,
        message: str,
        id: int,
        command: str,
        cwd: str | None,
        env: Mapping[str, Any] | None,
        input: str | bytes | None,
        stdout: Sequence[str] | str,
        stderr: Sequence[str] | str,
        *,
        host: str = "",
        rc: int = -1,
    ) -> None:
        stdout_lines, stderr_lines = _as_lines(stdout), _as_lines(stderr)
        out, err = "\n".join(stdout_lines), "\n".join(stderr_lines)
        environment = dict(env or {})
        report = [f"Command #{id} {message}"]
        if host:
            report.append(f"Host: {host}")
        report.append(f"Command: {command}")
        if cwd is not None:
            report.append(f"CWD: {cwd}")
        if environment:
            report.append("Env:" + _indented("\n".join(f"{k}={v}" for k, v in environment.items())))
        if out:
            report.append("Output:" + _indented(out))
        if err:
            report.append("Error output:" + _indented(err))
        # The report above already holds the output: the project's base class would add it again.
        _ProjectProcessError.__init__(self, host, command, rc, "", "", message="\n".join(report))
        self.stdout = out
        self.stderr = err
        self.message = message
        self.id = id
        self.cwd = cwd
        self.env = environment
        self.input = input
        self.stdout_lines = stdout_lines
        self.stderr_lines = stderr_lines

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ProcessError(ProcessErrorBase):
    """A command exited with a non-zero code (``rc``); pytest-mh's ``ProcessError``.

    It takes pytest-mh's arguments: ``rc, id, command, cwd, env, input, stdout, stderr``.
    """

    def __init__(  # noqa: PLR0917 - pytest-mh's positional signature
        self,
        rc: int,
        id: int,
        command: str,
        cwd: str | None,
        env: Mapping[str, Any] | None,
        input: str | bytes | None,
        stdout: Sequence[str] | str,
        stderr: Sequence[str] | str,
        *,
        host: str = "",
        message: str | None = None,
    ) -> None:
        reason = message or f"exited with return code {rc}"
        super().__init__(reason, id, command, cwd, env, input, stdout, stderr, host=host, rc=rc)


class ProcessTimeoutError(ProcessError, _ProjectProcessTimeoutError):
    """A command ran out of time and was stopped; ``timeout`` holds the seconds it had.

    It takes pytest-mh's arguments: ``timeout, id, command, cwd, env, input, stdout, stderr``.
    Unlike pytest-mh's, it is also a :class:`ProcessError` (exit code 124, as coreutils
    ``timeout`` reports it), which is what this project's own timeout error is.
    """

    def __init__(  # noqa: PLR0917 - pytest-mh's positional signature
        self,
        timeout: float,
        id: int,
        command: str,
        cwd: str | None,
        env: Mapping[str, Any] | None,
        input: str | bytes | None,
        stdout: Sequence[str] | str,
        stderr: Sequence[str] | str,
        *,
        host: str = "",
    ) -> None:
        self.timeout = timeout
        reason = f"timed out after {timeout:g} seconds"
        ProcessError.__init__(self, 124, id, command, cwd, env, input, stdout, stderr, host=host, message=reason)


ProcessErrorType = TypeVar("ProcessErrorType", bound=ProcessError, default=ProcessError)
"""A connection's own :class:`ProcessError` subclass."""

ProcessTimeoutErrorType = TypeVar("ProcessTimeoutErrorType", bound=ProcessTimeoutError, default=ProcessTimeoutError)
"""A connection's own :class:`ProcessTimeoutError` subclass."""


class ProcessResult(Generic[ProcessErrorType]):
    """A finished command: ``rc``, its output as text (lines joined with ``\\n``) and as lines.

    ``error`` is the error for this command whatever its exit code; :meth:`throw` raises it, for
    conditions of your own::

        result = client.host.conn.run("grep -c x /etc/passwd", raise_on_error=False)
        if result.stdout != "1":
            result.throw()
    """

    def __init__(
        self, rc: int, stdout: Sequence[str] | str, stderr: Sequence[str] | str, error: ProcessErrorType
    ) -> None:
        self.rc = rc
        self.stdout_lines = _as_lines(stdout)
        self.stderr_lines = _as_lines(stderr)
        self.stdout = "\n".join(self.stdout_lines)
        self.stderr = "\n".join(self.stderr_lines)
        self.error = error

    def throw(self) -> NoReturn:
        """Raise :attr:`error`.

        :raises ValueError: The result has no error to raise.
        """
        if self.error is None:
            raise ValueError("this result has no error to raise")
        raise self.error

    def __repr__(self) -> str:
        return f"<{type(self).__name__} rc={self.rc}>"


ProcessResultType = TypeVar("ProcessResultType", bound=ProcessResult[Any], default=ProcessResult[ProcessError])
"""A connection's own :class:`ProcessResult` subclass."""

ProcessInputBufferType = TypeVar("ProcessInputBufferType", bound=ProcessInputBuffer, default=ProcessInputBuffer)
"""A connection's own :class:`ProcessInputBuffer` subclass."""


class Process(ABC, Generic[ProcessResultType, ProcessInputBufferType, ProcessTimeoutErrorType]):
    """A command started by a connection, possibly still running: pytest-mh's ``Process``.

    ``Connection.async_run`` returns one already running; feed its ``stdin``, read ``stdout`` and
    ``stderr`` line by line while it runs, signal it, and :meth:`wait` for its result. ``with``
    waits for it on exit::

        with client.host.conn.async_run("cat") as process:
            process.stdin.write("hello\\n")
            assert next(process.stdout) == "hello"
        # waited here: EOF sent, exit code checked

    A connection implements it by subclassing: the properties :attr:`in_progress`, :attr:`stdout`,
    :attr:`stderr` and :attr:`stdin`, and :meth:`_run` (start the command: ``self.full_command_line``
    on the host, then write ``self.input`` if not None), :meth:`_wait` (send EOF, read the rest,
    return the result; it may raise :class:`TimeoutError` which :meth:`wait` turns into the timeout
    error), :meth:`send_eof`, :meth:`send_signal` and :meth:`_close` (end the channel, killing a
    command that still runs). Time limits are kept by :meth:`wait`: when the limit passes, it
    calls :meth:`_close` from another thread, so ``_wait`` must return (or raise) once ``_close``
    has run; it then raises an instance of :attr:`timeout_error_class` (set it to your subclass).

    :param timeout: Seconds :meth:`wait` allows by default; 0 means no limit.
    :param blocking_call: Whether the caller waits at once (``run``) or later (``async_run``): it
        only changes how the result is logged.
    :param additional_log_data: Extra fields logged with the command (user, container, ...).
    """

    timeout_error_class: type[ProcessTimeoutError] = ProcessTimeoutError
    """What :meth:`wait` raises when the time limit passes; subclasses name their own."""

    host_name: str = ""
    """The host named in this process' errors (this layer's addition)."""

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
        additional_log_data: dict[str, Any] | None = None,
    ) -> None:
        self.id = next_process_id()
        self.command = textwrap.dedent(command).strip()
        self.cwd = cwd
        self.env: dict[str, Any] = dict(env) if env is not None else {}
        self.input = input
        self.shell = shell
        self.logger = logger
        self.log_level = log_level
        self.timeout = timeout
        self.blocking_call = blocking_call
        self.additional_log_data: dict[str, Any] = dict(additional_log_data or {})
        self.full_command_line = shell.build_command_line(self.command, cwd=cwd, env=self.env)
        if os.environ.get("MH_CONNECTION_DEBUG", "no").lower() in ("1", "yes", "true"):
            self.log_level = ProcessLogLevel.Full

    # -- what a connection implements ------------------------------------------------------------
    @property
    @abstractmethod
    def in_progress(self) -> bool:
        """Whether the command has been started and not yet waited for."""

    @property
    @abstractmethod
    def stdout(self) -> Generator[str, None, None]:
        """The command's output lines as they come: ``next(process.stdout)`` blocks for the next one.

        :raises RuntimeError: The process is not running.
        """

    @property
    @abstractmethod
    def stderr(self) -> Generator[str, None, None]:
        """The command's error output lines as they come.

        :raises RuntimeError: The process is not running.
        """

    @property
    @abstractmethod
    def stdin(self) -> ProcessInputBufferType:
        """The command's standard input; :meth:`send_eof` closes it.

        :raises RuntimeError: The process is not running.
        """

    @abstractmethod
    def _run(self) -> None:
        """Start :attr:`full_command_line` and write :attr:`input` (when given) to its stdin."""

    @abstractmethod
    def _wait(self) -> ProcessResultType:
        """Send EOF, read the remaining output, wait for the exit code and return the result."""

    @abstractmethod
    def send_eof(self) -> None:
        """Close the command's standard input: it reads end of file.

        :raises RuntimeError: The process is not running.
        """

    @abstractmethod
    def send_signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` (``signal.SIGTERM``, ``signal.SIGUSR1``, ...) to the running command.

        :raises RuntimeError: The process is not running.
        """

    @abstractmethod
    def _close(self) -> None:
        """End the channel to the command now, killing it if it still runs (safe to call twice)."""

    # -- what every process does -----------------------------------------------------------------
    def run(self) -> Self:
        """Start the command (logged at ``Short`` and ``Full``) and return the process."""
        if self.log_level in (ProcessLogLevel.Short, ProcessLogLevel.Full) and self.logger.isEnabledFor(logging.INFO):
            self.logger.info(f"Executing command #{self.id}", extra={"data": self._log_data()})
        self._run()
        return self

    def wait(self, *, raise_on_error: bool = True, timeout: int | float | None = None) -> ProcessResultType:
        """Send EOF to the command, wait for it to end and return its result.

        :param raise_on_error: Raise the result's error on a non-zero exit code.
        :param timeout: Seconds to allow (None: the process' :attr:`timeout`; 0: no limit).
        :raises ProcessError: A non-zero exit code with ``raise_on_error``.
        :raises ProcessTimeoutError: The command overran the limit; it has been stopped.
        :raises RuntimeError: The process was never started or was already waited for.
        """
        __tracebackhide__ = True
        if not self.in_progress:
            raise RuntimeError(f"wait() on command #{self.id}, which is not running (never started or waited for)")
        limit = self.timeout if timeout is None else timeout
        try:
            result = self._wait_within(limit)
        except ProcessTimeoutError as err:
            self._log_timeout(err)
            raise
        self._log_result(result)
        if raise_on_error and result.rc != 0:
            result.throw()
        return result

    def _wait_within(self, limit: float) -> ProcessResultType:
        """:meth:`_wait`, with :meth:`_close` called from a watchdog thread when ``limit`` seconds pass."""
        if not limit:
            return self._wait()
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            self._close()

        watchdog = threading.Timer(limit, expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            result = self._wait()
        except ProcessTimeoutError:
            raise
        except Exception as err:
            if expired.is_set() or isinstance(err, TimeoutError):
                raise self._timeout_error(limit, [], []) from None
            raise
        finally:
            watchdog.cancel()
        if expired.is_set():
            raise self._timeout_error(limit, result.stdout_lines, result.stderr_lines)
        return result

    def _timeout_error(self, limit: float, stdout: list[str], stderr: list[str]) -> ProcessTimeoutError:
        cls = self.timeout_error_class
        return cls(limit, self.id, self.command, self.cwd, self.env, self.input, stdout, stderr, host=self.host_name)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.in_progress:
            self.wait()

    # -- logging ---------------------------------------------------------------------------------
    def _log_data(self, result: ProcessResult[Any] | ProcessErrorBase | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            **self.additional_log_data,
            "Shell": self.shell.shell_command,
            "Command": self.command,
            "Input": self.input,
            "Working directory": self.cwd,
            "Extra environment": self.env,
        }
        if result is not None:
            data["Output"] = result.stdout
            data["Error output"] = result.stderr
        return data

    def _log_result(self, result: ProcessResult[Any]) -> None:
        level = self.log_level
        if level is ProcessLogLevel.Silent or (level is ProcessLogLevel.Error and result.rc == 0):
            return
        if not self.logger.isEnabledFor(logging.INFO):
            return
        if self.blocking_call and level is not ProcessLogLevel.Error:
            # The command itself was logged just before: only its outcome is new.
            output = {"Output": result.stdout, "Error output": result.stderr}
            extra = {"data": output} if level is ProcessLogLevel.Full else {}
            self.logger.info(f"Previous command completed with exit code {result.rc}", extra=extra)
            return
        data = self._log_data(result if level is not ProcessLogLevel.Short else None)
        self.logger.info(f"Command #{self.id} completed with exit code {result.rc}", extra={"data": data})

    def _log_timeout(self, error: ProcessTimeoutError) -> None:
        if self.log_level is ProcessLogLevel.Silent:
            return
        self.logger.error(
            f"Command #{self.id} timed out after {error.timeout:g} seconds", extra={"data": self._log_data(error)}
        )


ProcessType = TypeVar("ProcessType", bound=Process[Any, Any, Any], default=Any)
"""A connection's own :class:`Process` subclass."""
