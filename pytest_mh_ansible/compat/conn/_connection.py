"""pytest-mh's ``Connection``: the command API (run, exec, async, expect) that every connection shares."""

from __future__ import annotations

import shlex
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, Self

from ._process import ProcessLogLevel, ProcessResultType, ProcessType

if TYPE_CHECKING:
    from types import TracebackType

    from ..logger import MultihostLogger
    from ._shell import Shell

__all__ = ["Connection", "ConnectionError"]


class ConnectionError(Exception):
    """The host (or container) cannot be reached."""


def _argv_line(argv: Sequence[Any], method: str, other: str) -> str:
    if isinstance(argv, str | bytes) or not isinstance(argv, Sequence):
        raise ValueError(f"{method}() takes a list of arguments, got {argv!r}: did you mean {other}()?")
    return shlex.join(str(arg) for arg in argv)


class Connection(ABC, Generic[ProcessType, ProcessResultType]):
    """A connection to a host that runs commands: pytest-mh's ``Connection``.

    ``run``/``exec`` wait for the command; ``async_run``/``async_exec`` return the running
    :class:`~pytest_mh_ansible.compat.conn.Process`. Scripts are dedented and stripped and run
    by :attr:`shell`; ``env`` and ``cwd`` are put in front of them::

        result = client.host.conn.run("echo $GREETING", env={"GREETING": "hi"})
        process = client.host.conn.async_run("cat")
        process.stdin.write("hello\\n")
        process.send_eof()
        assert process.wait().stdout == "hello"

    A connection implements :attr:`connected`, :meth:`connect`, :meth:`disconnect`,
    :meth:`create_process` (a :class:`Process` not yet started, with this connection's shell,
    logger and :attr:`timeout`) and :meth:`from_confdict`; the rest comes from here.

    :param shell: Runs the scripts.
    :param logger: Logs each command.
    :param timeout: Default seconds a command may run; 0 means no limit.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Connection and args:
            # This layer's earlier API: Connection(ansible_connection, shell, host=...) made a host's
            # connection. pytest-mh's takes keywords only, so positional arguments cannot be meant for it.
            for subclass in Connection.__subclasses__():
                if getattr(subclass, "_mh_takes_positional", False):
                    return super().__new__(subclass)
        return super().__new__(cls)

    def __init__(self, *, shell: Shell, logger: MultihostLogger, timeout: int | float = 300) -> None:
        self.shell = shell
        self.logger = logger
        self.timeout = timeout

    # -- what a connection implements ------------------------------------------------------------
    @property
    @abstractmethod
    def connected(self) -> bool:
        """Whether the connection is open."""

    @abstractmethod
    def connect(self) -> None:
        """Open the connection (nothing to do when it is open).

        :raises ConnectionError: The host cannot be reached.
        """

    @abstractmethod
    def disconnect(self) -> None:
        """Close the connection."""

    @abstractmethod
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
    ) -> ProcessType:
        """A new process for ``command``, not started yet."""

    @classmethod
    @abstractmethod
    def from_confdict(cls, host: Any, confdict: dict[str, Any]) -> Self:
        """The connection that ``host`` describes with ``confdict`` (its ``conn`` section in pytest-mh)."""

    # -- the command API -------------------------------------------------------------------------
    def async_run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: dict[str, Any] | None = None,
        input: str | bytes | None = None,
        log_level: ProcessLogLevel = ProcessLogLevel.Full,
        unified_newlines: bool = False,
    ) -> ProcessType:
        """Start a script and return its running process without waiting.

        :raises ValueError: ``command`` is not a string (``async_exec`` takes a list).
        """
        if not isinstance(command, str):
            raise ValueError(f"async_run() takes a string, got {command!r}: did you mean async_exec()?")
        self.connect()
        process = self.create_process(
            command=command,
            cwd=cwd,
            env=env,
            input=input,
            log_level=log_level,
            blocking_call=False,
            unified_newlines=unified_newlines,
        )
        process.run()
        return process

    def run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: dict[str, Any] | None = None,
        input: str | None = None,
        log_level: ProcessLogLevel = ProcessLogLevel.Full,
        raise_on_error: bool = True,
        timeout: int | None = None,
        unified_newlines: bool = False,
    ) -> ProcessResultType:
        """Run a script and wait for its result.

        :param timeout: Seconds it may run (None: the connection's :attr:`timeout`; 0: no limit).
        :raises ProcessError: A non-zero exit code with ``raise_on_error``.
        :raises ProcessTimeoutError: The script overran ``timeout``.
        :raises ValueError: ``command`` is not a string (``exec`` takes a list).
        """
        __tracebackhide__ = True
        if not isinstance(command, str):
            raise ValueError(f"run() takes a string, got {command!r}: did you mean exec()?")
        self.connect()
        process = self.create_process(
            command=command,
            cwd=cwd,
            env=env,
            input=input,
            log_level=log_level,
            blocking_call=True,
            unified_newlines=unified_newlines,
        )
        process.run()
        result: ProcessResultType = process.wait(raise_on_error=raise_on_error, timeout=timeout)
        return result

    def async_exec(
        self,
        argv: list[Any],
        *,
        cwd: str | None = None,
        env: dict[str, Any] | None = None,
        input: str | None = None,
        log_level: ProcessLogLevel = ProcessLogLevel.Full,
    ) -> ProcessType:
        """:meth:`async_run` of a program and its arguments, each quoted (no shell syntax)."""
        line = _argv_line(argv, "async_exec", "async_run")
        return self.async_run(line, cwd=cwd, env=env, input=input, log_level=log_level)

    def exec(
        self,
        argv: list[Any],
        *,
        cwd: str | None = None,
        env: dict[str, Any] | None = None,
        input: str | None = None,
        log_level: ProcessLogLevel = ProcessLogLevel.Full,
        raise_on_error: bool = True,
        timeout: int | None = None,
    ) -> ProcessResultType:
        """:meth:`run` of a program and its arguments, each quoted (no shell syntax)."""
        __tracebackhide__ = True
        line = _argv_line(argv, "exec", "run")
        return self.run(
            line, cwd=cwd, env=env, input=input, log_level=log_level, raise_on_error=raise_on_error, timeout=timeout
        )

    def expect(self, expect_script: str, *, verbose: bool = True, raise_on_error: bool = False) -> ProcessResultType:
        """Run an ``expect`` (Tcl) script, given on its stdin; its exit code is the script's ``exit N``.

        :param verbose: ``expect -d``: its debug output lands in stderr.
        """
        __tracebackhide__ = True
        argv = ["expect", "-d"] if verbose else ["expect"]
        return self.exec(argv, input=expect_script, raise_on_error=raise_on_error)

    def expect_nobody(
        self, expect_script: str, *, verbose: bool = True, raise_on_error: bool = False
    ) -> ProcessResultType:
        """:meth:`expect` as user ``nobody`` (so that ``su`` and ``passwd`` ask for passwords as for a user)."""
        __tracebackhide__ = True
        inner = "expect -d" if verbose else "expect"
        return self.run(
            f"su --shell /bin/sh nobody -c {shlex.quote(inner)}", input=expect_script, raise_on_error=raise_on_error
        )

    def __enter__(self) -> Self:
        self.connect()
        return self

    def __exit__(
        self,
        exception_type: type[BaseException] | None,
        exception_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.disconnect()
