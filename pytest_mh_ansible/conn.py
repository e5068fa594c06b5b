"""Shell commands and file copies on a host (``host.conn``), and their results."""

from __future__ import annotations

import logging
import os
import re
import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict, Unpack, final, runtime_checkable

from ._private.secrets import secrets
from .errors import ProcessError

__all__ = ["Connection", "ProcessResult", "Transport", "build_command"]

logger = logging.getLogger("pytest_mh_ansible.conn")

# Output of successful commands is logged below DEBUG: it is rarely wanted and often large.
OUTPUT_LEVEL = 5

_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@final
@dataclass(frozen=True)
class ProcessResult:
    """What a command run on a host gave back.

    Example::

        result = client.conn.run("id -un", raise_on_error=False)
        if result.succeeded:
            assert result.stdout_lines == ["root"]

    :ivar rc: The exit code.
    :ivar stdout: Standard output, decoded as UTF-8 (invalid bytes replaced).
    :ivar stderr: Standard error, decoded the same way.
    :ivar command: The command as the caller gave it (before env/cwd/become were added).
    :ivar host: The inventory hostname it ran on.
    """

    rc: int
    stdout: str
    stderr: str
    command: str
    host: str

    @property
    def stdout_lines(self) -> list[str]:
        return self.stdout.splitlines()

    @property
    def stderr_lines(self) -> list[str]:
        return self.stderr.splitlines()

    @property
    def succeeded(self) -> bool:
        return self.rc == 0

    def throw(self) -> ProcessResult:
        """Raise :class:`ProcessError` if the command failed; return the result otherwise.

        :raises ProcessError: ``rc`` is not 0 (the message has secrets masked).
        """
        __tracebackhide__ = True
        if self.rc != 0:
            raise ProcessError(
                self.host, secrets.mask(self.command), self.rc, secrets.mask(self.stdout), secrets.mask(self.stderr)
            )
        return self


class ExecOptions(TypedDict, total=False):
    """The keywords of :meth:`Transport.exec`: the command's stdin, become (None: the host's
    ``ansible_become``), the become user and a timeout in seconds.

    A key left out means None. A transport may take them as ``**options`` or spell them out.
    """

    input: bytes | None
    become: bool | None
    become_user: str | None
    timeout: float | None


class Transport(Protocol):
    """What :class:`Connection` needs from a transport; ``AnsibleTransport`` is the real one."""

    def connect(self) -> None: ...

    def close(self) -> None: ...

    def exec(self, command: str, **options: Unpack[ExecOptions]) -> tuple[int, bytes, bytes]: ...

    def put(self, local: str | os.PathLike[str], remote: str) -> None: ...

    def get(self, remote: str, local: str | os.PathLike[str]) -> None: ...


@runtime_checkable
class ScriptTransport(Protocol):
    """A transport that can also run a small Python script on the host without a module (the agent's).

    The rollback journal takes its snapshots of paths this way when the transport offers it; other
    transports (and hosts without an agent) get the collection's modules.
    """

    def script(self, source: bytes, request: Any) -> tuple[int, bytes, bytes] | None: ...


def build_command(command: str, *, env: Mapping[str, str] | None = None, cwd: str | None = None) -> str:
    """The shell command that runs ``command`` in ``cwd`` with ``env`` added, every value quoted.

    :raises ValueError: An environment variable name is not a valid shell name.
    """
    parts = []
    if cwd is not None:
        parts.append(f"cd {shlex.quote(cwd)} &&")
    if env:
        for name in env:
            if not _ENV_NAME_RE.match(name):
                raise ValueError(f"environment variable name {name!r} is not a valid shell name")
        assignments = " ".join(f"{name}={shlex.quote(str(value))}" for name, value in env.items())
        parts.append(f"env {assignments} /bin/sh -c {shlex.quote(command)}")
    else:
        parts.append(command if cwd is None else f"{{ {command}\n}}")
    return " ".join(parts)


CommandObserver = Callable[[str, str | None, ProcessResult, bool | None, str | None], None]
"""``observer(command, stdin, result, become, become_user)``: what :class:`Connection` reports after each command."""


class Connection:
    """A host's connection: run commands and copy files, through the host's Ansible connection plugin.

    The connection opens on first use and stays open until :meth:`close` (ssh multiplexing,
    one paramiko transport). Every command is logged with the host's name; secrets known to
    the session are masked in logs and errors.

    Example::

        result = client.conn.run("cat /etc/hostname")
        client.conn.run("systemctl restart sssd", become=True, timeout=60)
        client.conn.put("tests/data/app.conf", "/etc/app.conf")

    :param host: The inventory hostname.
    :param variables: The host's Ansible variables (``ansible_connection``, ``ansible_host``, ...).
    :param transport: Where commands go; by default the host's Ansible connection plugin.
    :param observer: Told about every command that ran, with its result (the session keeps them
        for ``--mh-export-playbooks``).
    """

    def __init__(
        self,
        host: str,
        variables: Mapping[str, Any],
        *,
        transport: Transport | None = None,
        observer: CommandObserver | None = None,
    ) -> None:
        self.host = host
        self._observer = observer
        secrets.add_from_vars(variables)
        if transport is None:
            from ._private.ansible.transport import AnsibleTransport

            transport = AnsibleTransport(host, variables)
        self._transport = transport

    def __mh_describe__(self) -> str:
        return f"connection to {self.host!r}"

    def connect(self) -> None:
        """Open the connection now instead of on first use.

        :raises HostUnreachableError: The host cannot be reached or refuses the credentials.
        """
        self._transport.connect()

    def close(self) -> None:
        """Close the connection (and stop any ssh ControlMaster it started); it reopens on next use."""
        self._transport.close()

    def run(
        self,
        command: str,
        *,
        input: str | bytes | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        raise_on_error: bool = True,
        become: bool | None = None,
        become_user: str | None = None,
        silent: bool = False,
    ) -> ProcessResult:
        """Run a shell command on the host.

        :param command: A shell command line (``/bin/sh`` syntax, unless the host says otherwise).
        :param input: Data for the command's stdin (str is encoded as UTF-8); none means /dev/null.
        :param env: Extra environment variables for the command.
        :param cwd: Directory to run in.
        :param timeout: Seconds; the command is killed on the host when they run out.
        :param raise_on_error: Raise :class:`ProcessError` on a non-zero exit code.
        :param become: Run with privilege escalation; None follows the host's ``ansible_become``.
        :param become_user: Become this user (implies ``become`` unless it is False).
        :param silent: Log neither the command nor its output (pytest-mh's ``ProcessLogLevel.Silent``).
        :returns: The result; with ``raise_on_error`` only successful ones.
        :raises ProcessError: The command failed and ``raise_on_error`` is set.
        :raises ProcessTimeoutError: The command overran ``timeout``.
        :raises HostUnreachableError: The host cannot be reached.
        """
        __tracebackhide__ = True
        full = build_command(command, env=env, cwd=cwd)
        data = input.encode() if isinstance(input, str) else input
        masked = secrets.mask(command)
        started = time.monotonic()
        try:
            rc, out, err = self._transport.exec(
                full, input=data, become=become, become_user=become_user, timeout=timeout
            )
        except Exception as exc:
            if not silent:
                logger.debug("%s: %s failed after %.3f s: %s", self.host, masked, time.monotonic() - started, exc)
            raise
        result = ProcessResult(
            rc=rc,
            stdout=out.decode("utf-8", errors="replace"),
            stderr=err.decode("utf-8", errors="replace"),
            command=command,
            host=self.host,
        )
        if not silent:
            logger.debug("%s: %s -> rc=%d in %.3f s", self.host, masked, rc, time.monotonic() - started)
        if self._observer is not None:
            self._observer(full, input if isinstance(input, str) else None, result, become, become_user)
        level = logging.DEBUG if rc != 0 else OUTPUT_LEVEL
        if not silent and logger.isEnabledFor(level) and (result.stdout or result.stderr):
            logger.log(
                level,
                "%s: stdout:\n%s\nstderr:\n%s",
                self.host,
                secrets.mask(result.stdout),
                secrets.mask(result.stderr),
            )
        if raise_on_error:
            result.throw()
        return result

    def _mh_script(self, source: bytes, request: Any) -> tuple[int, bytes, bytes] | None:
        """The framework's own: run a stdlib-only Python script through the transport's agent, if it has one.

        :returns: The exit code, stdout and stderr; None when there is no agent for it (use a module).
        """
        if not isinstance(self._transport, ScriptTransport):
            return None
        return self._transport.script(source, request)

    def put(self, local: str | os.PathLike[str], remote: str) -> None:
        """Copy a file from the controller to the host (as the connection user)."""
        logger.debug("%s: put %s -> %s", self.host, os.fspath(local), remote)
        self._transport.put(local, remote)

    def get(self, remote: str, local: str | os.PathLike[str]) -> None:
        """Copy a file from the host to the controller."""
        logger.debug("%s: get %s -> %s", self.host, remote, os.fspath(local))
        self._transport.get(remote, local)
