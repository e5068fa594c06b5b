"""``pytest_mh.conn``: pytest-mh's command API (``run``, ``exec``, ``expect``) on this project's connections."""

from __future__ import annotations

import itertools
import logging
import shlex
import textwrap
from collections.abc import Mapping, Sequence
from enum import Enum, auto
from typing import TYPE_CHECKING, Any, NoReturn, TypedDict, Unpack

from .. import Connection as AnsibleConnection
from .. import MultihostError
from .. import ProcessError as _ProcessError
from .. import ProcessTimeoutError as _ProcessTimeoutError

if TYPE_CHECKING:
    import os

__all__ = [
    "Bash",
    "Connection",
    "ExecOptions",
    "Powershell",
    "ProcessError",
    "ProcessLogLevel",
    "ProcessResult",
    "ProcessTimeoutError",
    "Shell",
    "compat_conn",
]

log = logging.getLogger("pytest_mh_ansible.compat.conn")
_IDS = itertools.count(1)

DEFAULT_TIMEOUT: float | None = None
"""No per-command time limit unless one is given: pytest-mh's default of 300 s is not enforced.

Enforcing a limit costs a watcher thread on the controller and a ``timeout`` process on the host
for every command (about 35 ms each on a busy machine, a third of the compat suite's wall time).
A host's ``mh_command_timeout`` variable (``convert-mhc`` writes it from ``conn.timeout``) sets a
default; ``--mh-timeout`` limits whole tests.
"""


class Shell:
    """The shell a host's commands run in: its name and the command that reads a script."""

    def __init__(self, name: str, shell_command: str) -> None:
        self.name = name
        self.shell_command = shell_command

    def build_command_line(self, script: str, *, cwd: str | None, env: Mapping[str, Any]) -> str:
        """The command line that runs ``script`` in ``cwd`` with ``env`` exported."""
        lines = [self._export(name, str(value)) for name, value in env.items()]
        if cwd is not None:
            lines.append(f"cd {self._quote(cwd)}")
        lines.append(script)
        return f"{self.shell_command} {self._quote(chr(10).join(lines))}"

    def _quote(self, value: str) -> str:
        """``value`` as one word of this shell."""
        return shlex.quote(value)

    def _export(self, name: str, value: str) -> str:
        """The statement that sets environment variable ``name`` for the rest of the script."""
        return f"export {name}={self._quote(value)}"


class Bash(Shell):
    """bash: the default shell of a pytest-mh host (``/usr/bin/env bash -c``)."""

    def __init__(self) -> None:
        super().__init__("bash", "/usr/bin/env bash -c")


class Powershell(Shell):
    """PowerShell (hosts with ``mh_os_family: windows``)."""

    def __init__(self) -> None:
        super().__init__("powershell", "powershell -NonInteractive -Command")

    def _quote(self, value: str) -> str:
        return "'" + value.replace("'", "''") + "'"

    def _export(self, name: str, value: str) -> str:
        return f"$Env:{name} = {self._quote(value)}"


class ProcessLogLevel(Enum):
    """How much of a command goes to the log: accepted for compatibility; this project logs commands at DEBUG."""

    Silent = auto()
    Short = auto()
    Full = auto()
    Error = auto()


_Run = tuple[int, str, str | None, Mapping[str, Any] | None, str | None, str, str]
"""What pytest-mh's process errors take after their first argument: id, command, cwd, env, input, stdout, stderr."""


class ProcessError(_ProcessError):
    """pytest-mh's ``ProcessError``: a command exited with a non-zero code.

    It is also this project's :class:`pytest_mh_ansible.ProcessError`, so ``except`` clauses of
    either kind catch it. Attributes: ``rc``, ``id``, ``command``, ``cwd``, ``env``, ``input``,
    ``stdout``, ``stderr``, ``stdout_lines``, ``stderr_lines``, ``message`` and ``host``.
    """

    def __init__(  # noqa: PLR0917 - pytest-mh's signature
        self,
        rc: int,
        id: int,
        command: str,
        cwd: str | None,
        env: Mapping[str, Any] | None,
        input: str | None,
        stdout: str,
        stderr: str,
        *,
        host: str = "",
        message: str | None = None,
    ) -> None:
        self.id = id
        self.cwd = cwd
        self.env = dict(env or {})
        self.input = input
        self.stdout_lines = stdout.splitlines()
        self.stderr_lines = stderr.splitlines()
        self.message = message or f"Command #{id} exited with return code {rc}"
        details = [self.message, f"Host: {host}", f"Command: {command}"]
        if cwd is not None:
            details.append(f"CWD: {cwd}")
        if env:
            details.append(f"Env: {', '.join(sorted(env))}")
        _ProcessError.__init__(self, host, command, rc, stdout, stderr, message="\n".join(details))


class ProcessTimeoutError(ProcessError, _ProcessTimeoutError):
    """A command ran out of time (killed on the host); ``timeout`` holds the seconds it had.

    It takes pytest-mh's arguments: ``timeout``, then those of :class:`ProcessError` after ``rc``.
    """

    def __init__(self, timeout: float, *run: *_Run, host: str = "") -> None:
        self.timeout = timeout
        message = f"Command #{run[0]} timed out after {timeout:g} seconds"
        ProcessError.__init__(self, 124, *run, host=host, message=message)


class ProcessResult:
    """pytest-mh's result of a finished command.

    ``stdout``/``stderr`` are the output lines joined with ``\\n`` (no trailing newline), as in
    pytest-mh; ``error`` is the :class:`ProcessError` that :meth:`throw` raises.
    """

    def __init__(self, rc: int, stdout: str, stderr: str, error: ProcessError) -> None:
        self.rc = rc
        self.stdout_lines = stdout.splitlines()
        self.stderr_lines = stderr.splitlines()
        self.stdout = "\n".join(self.stdout_lines)
        self.stderr = "\n".join(self.stderr_lines)
        self.error = error

    def throw(self) -> NoReturn:
        """Raise :attr:`error` (for a condition of your own, on a result with any exit code)."""
        raise self.error

    def __repr__(self) -> str:
        return f"<ProcessResult rc={self.rc}>"


class ExecOptions(TypedDict, total=False):
    """The keywords of pytest-mh's ``exec``: those of :meth:`Connection.run` but the shell's."""

    cwd: str | None
    env: Mapping[str, Any] | None
    input: str | bytes | None
    log_level: ProcessLogLevel
    raise_on_error: bool
    timeout: float | None


class Connection:
    """A pytest-mh connection over this project's (Ansible) connection of the host.

    Scripts are dedented and stripped, then run by the host's shell (bash by default);
    ``env`` and ``cwd`` are put in front of the script. Everything this project's
    :class:`~pytest_mh_ansible.Connection` offers (``become``, ``put``, ``get``) stays available.

    Example::

        result = client.host.conn.run("echo $BASH_VERSION", raise_on_error=False)
        client.host.conn.exec(["id", "-un"])
        client.host.conn.expect('spawn su - user1 ; expect "Password:" ; send "Secret123\\r" ; expect eof')
    """

    connected: bool = False
    """Whether :meth:`connect` has run (and :meth:`disconnect` not since); a new connection is not connected."""

    def __init__(
        self, connection: AnsibleConnection, shell: Shell, *, host: str, timeout: float | None = DEFAULT_TIMEOUT
    ) -> None:
        self.ansible = connection
        self.shell = shell
        self.host = host
        self.timeout = timeout

    # -- life --------------------------------------------------------------------------------------
    def connect(self) -> None:
        self.ansible.connect()
        self.connected = True

    def disconnect(self) -> None:
        self.ansible.close()
        self.connected = False

    def close(self) -> None:
        self.disconnect()

    def __enter__(self) -> Connection:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.disconnect()

    # -- commands ----------------------------------------------------------------------------------
    def run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, Any] | None = None,
        input: str | bytes | None = None,
        log_level: ProcessLogLevel = ProcessLogLevel.Full,
        raise_on_error: bool = True,
        timeout: float | None = None,
        unified_newlines: bool = False,
        become: bool | None = None,
        become_user: str | None = None,
    ) -> ProcessResult:
        """Run a shell script on the host and wait for it (pytest-mh's ``run``).

        :raises ProcessError: A non-zero exit code with ``raise_on_error``.
        :raises ProcessTimeoutError: The script overran ``timeout`` (else the host's ``mh_command_timeout``).
        """
        __tracebackhide__ = True
        if not isinstance(command, str):
            raise ValueError(f"{self.host}: run() takes a string, got {command!r}: did you mean exec()?")
        script = textwrap.dedent(command).strip()
        line = self.shell.build_command_line(script, cwd=cwd, env=env or {})
        text_input = input.decode(errors="replace") if isinstance(input, bytes) else input
        process_id = next(_IDS)
        limit = self.timeout if timeout is None else timeout
        try:
            raw = self.ansible.run(
                line,
                input=input,
                timeout=limit or None,
                raise_on_error=False,
                become=become,
                become_user=become_user,
            )
        except _ProcessTimeoutError as err:
            raise ProcessTimeoutError(
                err.timeout, process_id, script, cwd, env, text_input, err.stdout, err.stderr, host=self.host
            ) from None
        stdout, stderr = raw.stdout, raw.stderr
        if unified_newlines:
            stdout, stderr = stdout.replace("\r\n", "\n"), stderr.replace("\r\n", "\n")
        error = ProcessError(raw.rc, process_id, script, cwd, env, text_input, stdout, stderr, host=self.host)
        result = ProcessResult(raw.rc, stdout, stderr, error)
        if log_level is not ProcessLogLevel.Silent:
            log.debug("%s: #%d %s -> rc=%d", self.host, process_id, script.splitlines()[0] if script else "", raw.rc)
        if raise_on_error and raw.rc != 0:
            raise error
        return result

    def exec(self, argv: Sequence[Any], **options: Unpack[ExecOptions]) -> ProcessResult:
        """Run a program with arguments, each quoted (no shell syntax); pytest-mh's ``exec``.

        It takes the keywords of :meth:`run` that pytest-mh's ``exec`` takes (:class:`ExecOptions`).
        """
        __tracebackhide__ = True
        if isinstance(argv, str):
            raise ValueError(f"{self.host}: exec() takes a list of arguments, got {argv!r}: did you mean run()?")
        return self.run(shlex.join(str(arg) for arg in argv), **options)

    def expect(
        self,
        script: str,
        *,
        verbose: bool = True,
        raise_on_error: bool = False,
        timeout: float | None = None,
    ) -> ProcessResult:
        """Run an ``expect`` script (Tcl) on the host: the script goes to ``expect``'s stdin.

        The exit code is the script's (``exit N``); ``expect`` must be installed on the host.
        """
        __tracebackhide__ = True
        command = "expect -d" if verbose else "expect"
        return self.run(
            command,
            input=textwrap.dedent(script).strip() + "\n",
            raise_on_error=raise_on_error,
            timeout=timeout,
            log_level=ProcessLogLevel.Full,
        )

    def expect_nobody(
        self, script: str, *, verbose: bool = True, raise_on_error: bool = False, timeout: float | None = None
    ) -> ProcessResult:
        """:meth:`expect` as user ``nobody``."""
        __tracebackhide__ = True
        command = "su --shell /bin/sh nobody -c " + shlex.quote("expect -d" if verbose else "expect")
        return self.run(
            command, input=textwrap.dedent(script).strip() + "\n", raise_on_error=raise_on_error, timeout=timeout
        )

    def async_run(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Not supported: commands go through Ansible connection plugins, which run them to the end."""
        raise MultihostError(f"{self.host}: async_run() is not supported by the pytest-mh compatibility layer")

    async_exec = async_run

    # -- this project's connection API, for code written against it ---------------------------------
    def put(self, local: str | os.PathLike[str], remote: str) -> None:
        self.ansible.put(local, remote)

    def get(self, remote: str, local: str | os.PathLike[str]) -> None:
        self.ansible.get(remote, local)


def compat_conn(host: Any) -> Connection:
    """``host.conn`` with pytest-mh's API: the compatibility host's own, or a wrapper for any other host."""
    conn = host.conn
    if isinstance(conn, Connection):
        return conn
    return Connection(conn, Bash(), host=str(host.name))
