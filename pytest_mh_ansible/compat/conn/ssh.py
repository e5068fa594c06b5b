"""``pytest_mh.conn.ssh``: pytest-mh's ``SSHClient``, an ssh session of its own as any user, on paramiko.

A host's ``conn`` runs commands as the inventory's user through Ansible. Tests of logins, PAM,
password changes and ``su``/``sudo`` need more: a new session as a *test* user, with that user's
password or key, that may fail to authenticate. :class:`SSHClient` is that session, with the
whole command API of :class:`~pytest_mh_ansible.compat.conn.Connection` (``run``, ``exec``,
``expect``, ``async_run``, ...)::

    from pytest_mh.conn.ssh import SSHAuthenticationError, SSHClient

    with SSHClient(client.host.conn.host, user="user1", password="Secret123",
                   shell=client.host.shell, logger=client.host.logger) as ssh:
        assert ssh.run("id -un").stdout == "user1"

    with pytest.raises(SSHAuthenticationError):
        SSHClient(client.host.conn.host, user="user1", password="wrong", ...).connect()

It talks to the host with paramiko directly (no Ansible connection plugin), so it works on every
ansible-core this project supports. Host keys are not checked, as in pytest-mh. Passwords given
to it are registered as secrets: the project's logs, reports and errors show ``********``.
"""

from __future__ import annotations

import contextlib
import signal
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from ..._private.secrets import secrets
from ..logger import MultihostLogger, logger_for
from . import (
    Bash,
    Connection,
    ConnectionError,
    Process,
    ProcessInputBuffer,
    ProcessLogLevel,
    ProcessResult,
    Shell,
    _paramiko,
)
from ._host import HostConnection
from ._ssh_errors import SSHProcessError, SSHProcessTimeoutError
from ._streams import OutputLines

if TYPE_CHECKING:
    from collections.abc import Generator

__all__ = [
    "SSHAuthenticationError",
    "SSHClient",
    "SSHInputBuffer",
    "SSHProcess",
    "SSHProcessError",
    "SSHProcessResult",
    "SSHProcessTimeoutError",
]

_CLOSE_PID_WAIT = 2.0  # seconds a command being closed may take to report its pid (it was just started)

DEFAULT_PASSWORD = "Secret123"
"""The password pytest-mh's ``from_confdict`` uses when the host's ``conn`` names neither password nor key."""


class SSHInputBuffer(ProcessInputBuffer):
    """The stdin of a running :class:`SSHProcess`: ``process.stdin.write("text")``.

    :param channel: The command's channel (this layer's paramiko command).
    """

    def __init__(self, channel: _paramiko.RemoteCommand) -> None:
        self._channel = channel

    def write(self, data: str | bytes) -> None:
        """Send ``data`` (text as UTF-8) to the command.

        :raises ConnectionError: The input was closed (``send_eof``) or the connection broke.
        """
        try:
            self._channel.write(data.encode("utf-8") if isinstance(data, str) else data)
        except _paramiko.SessionError as err:
            raise ConnectionError(str(err)) from err


class SSHProcessResult(ProcessResult[SSHProcessError]):
    """The result of a command run by :class:`SSHClient`.

    :param unified_newlines: Drop a carriage return at the end of each line (output of a pty, of Windows).
    """

    def __init__(
        self,
        rc: int,
        stdout: list[str],
        stderr: list[str],
        error: SSHProcessError,
        *,
        unified_newlines: bool = False,
    ) -> None:
        if unified_newlines:
            stdout = [line.removesuffix("\r") for line in stdout]
            stderr = [line.removesuffix("\r") for line in stderr]
        super().__init__(rc, stdout, stderr, error)


class SSHProcess(Process[SSHProcessResult, SSHInputBuffer, SSHProcessTimeoutError]):
    """A command on a channel of its own of an :class:`SSHClient`'s session.

    ``send_signal`` reaches the command's whole process group on the host (sshd gives each
    command one), as OpenSSH's own signal request does; ending the time limit kills it.

    :param client: The client that runs it (named in logs and errors).
    :param conn: The client's open session.
    """

    timeout_error_class = SSHProcessTimeoutError

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
        client: SSHClient,
        conn: _paramiko.SSHSession,
        unified_newlines: bool = False,
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
            additional_log_data={"Host": client.host, "User": client.user},
        )
        self.host_name = client.host
        self._session = conn
        self._unified_newlines = unified_newlines
        self._channel: _paramiko.RemoteCommand | None = None
        self._stdout: OutputLines | None = None
        self._stderr: OutputLines | None = None
        self._stdin: SSHInputBuffer | None = None

    @property
    def in_progress(self) -> bool:
        return self._channel is not None

    @property
    def stdout(self) -> Generator[str, None, None]:
        if self._stdout is None:
            raise RuntimeError(f"stdout of command #{self.id}, which is not running")
        return self._stdout

    @property
    def stderr(self) -> Generator[str, None, None]:
        if self._stderr is None:
            raise RuntimeError(f"stderr of command #{self.id}, which is not running")
        return self._stderr

    @property
    def stdin(self) -> SSHInputBuffer:
        if self._stdin is None:
            raise RuntimeError(f"stdin of command #{self.id}, which is not running")
        return self._stdin

    def _run(self) -> None:
        # A POSIX login shell prints the pid the command will have; PowerShell hosts cannot (no send_signal).
        report_pid = self.shell.name != "powershell"
        try:
            channel = self._session.start(self.full_command_line, report_pid=report_pid)
        except _paramiko.SessionError as err:
            raise ConnectionError(str(err)) from err
        self._channel = channel
        self._stdout = OutputLines(channel.read_stdout, unified_newlines=self._unified_newlines, name="ssh-stdout")
        self._stderr = OutputLines(channel.read_stderr, unified_newlines=self._unified_newlines, name="ssh-stderr")
        self._stdin = SSHInputBuffer(channel)
        if self.input is not None:
            try:
                self._stdin.write(self.input)
            except ConnectionError:
                # A command may end without reading all its input (``true``, ``head -c 10``): its result stands.
                if not channel.ended:
                    self._close()
                    raise
            except BaseException:
                self._close()
                raise

    def _wait(self) -> SSHProcessResult:
        channel, stdout, stderr = self._channel, self._stdout, self._stderr
        if channel is None or stdout is None or stderr is None:
            raise RuntimeError(f"wait() on command #{self.id}, which is not running")
        try:
            channel.shutdown_write()
            stdout.finish()
            stderr.finish()
            rc = channel.exit_code()
        finally:
            self._close()
        error = SSHProcessError(
            rc, self.id, self.command, self.cwd, self.env, self.input, stdout.lines, stderr.lines, host=self.host_name
        )
        return SSHProcessResult(rc, stdout.lines, stderr.lines, error, unified_newlines=self._unified_newlines)

    def send_eof(self) -> None:
        if self._channel is None:
            raise RuntimeError(f"send_eof() to command #{self.id}, which is not running")
        self._channel.shutdown_write()

    def send_signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the command's process group on the host, through a ``kill`` on another channel.

        :raises RuntimeError: The process is not running, or its pid is unknown (a login shell
            that is not POSIX, or a PowerShell host).
        :raises ConnectionError: The ``kill`` could not be run.
        """
        channel = self._channel
        if channel is None:
            raise RuntimeError(f"send_signal() to command #{self.id}, which is not running")
        try:
            pid = channel.wait_pid(_paramiko.KILL_TIMEOUT)
        except _paramiko.SessionError as err:
            raise RuntimeError(f"send_signal() to command #{self.id}: {err}") from err
        try:
            self._session.kill(pid, sig)
        except _paramiko.SessionError as err:
            raise ConnectionError(str(err)) from err

    def _close(self) -> None:
        channel, self._channel = self._channel, None
        if channel is None:
            return
        if not channel.finished and self._session.connected:
            # Still running (its time is up, or it is dropped): sshd would only hang up its pipes.
            with contextlib.suppress(_paramiko.SessionError):
                self._session.kill(channel.pid or channel.wait_pid(_CLOSE_PID_WAIT), signal.SIGKILL)
        channel.close()
        self._stdin = self._stdout = self._stderr = None


class SSHAuthenticationError(ConnectionError):
    """The host refused the user's password or key (wrong password, unknown key, locked account, PAM)."""

    def __init__(self, host: str, port: int, user: str, message: str) -> None:
        super().__init__(f"Unable to authenticate as {user!r} at {host}:{port} over SSH: {secrets.mask(message)}")
        self.host = host
        self.port = port
        self.user = user


class SSHClient(Connection[SSHProcess, SSHProcessResult]):
    """A new ssh session to ``host`` as ``user``, with a password or a private key (pytest-mh's ``SSHClient``).

    The session opens on :meth:`connect` (or the first command, or ``with``) and each command
    runs on a channel of its own. A password or key the server refuses raises
    :class:`SSHAuthenticationError`; a host that cannot be reached, :class:`ConnectionError`.

    Example::

        ssh = SSHClient("10.0.0.5", user="user1", password="Secret123", shell=Bash(), logger=host.logger)
        with ssh:
            ssh.run("passwd --status user1")
            process = ssh.async_run("sleep 30")
            process.send_signal(signal.SIGTERM)
            assert process.wait(raise_on_error=False).rc == 143

    :param host: Address (or name) of the host.
    :param user: Who logs in.
    :param password: The user's password (also answers keyboard-interactive prompts).
    :param private_key_path: A private key file (ed25519, ECDSA, RSA), tried before the password.
    :param private_key_password: The key file's passphrase.
    :param shell: Runs the scripts (default: bash).
    :param logger: Logs each command (default: the layer's logger for ``host``).
    :param timeout: Default seconds a command may run; 0 means no limit.
    :raises ValueError: Neither a password nor a key, or a key file that is not a private key.
    :raises OSError: The key file cannot be read.
    """

    def __init__(
        self,
        host: str,
        *,
        user: str,
        password: str | None = None,
        private_key_path: str | Path | None = None,
        private_key_password: str | None = None,
        port: int = 22,
        shell: Shell | None = None,
        logger: MultihostLogger | None = None,
        timeout: int = 300,
    ) -> None:
        super().__init__(shell=shell or Bash(), logger=logger or logger_for("ssh", host), timeout=timeout)
        if password is None and private_key_path is None:
            raise ValueError(f"SSHClient({host!r}, user={user!r}): give a password or a private_key_path")
        secrets.add(password)
        secrets.add(private_key_password)
        self.host = host
        self.user = user
        self.port = int(port)
        self.password = password
        self.private_key: bytes | None = None
        self.private_key_password: bytes | None = None
        key = None
        if private_key_path is not None:
            self.private_key = Path(private_key_path).read_bytes()
            key = _paramiko.load_private_key(self.private_key, private_key_password, source=str(private_key_path))
        if private_key_password is not None:
            self.private_key_password = private_key_password.encode("utf-8")
        self._session = _paramiko.SSHSession(host, self.port, user, password=password, private_key=key)
        # A client dropped without disconnect() must not keep its connection (and paramiko's thread) alive.
        weakref.finalize(self, self._session.close)

    def __repr__(self) -> str:
        return f"<SSHClient {self.user}@{self.host}:{self.port}>"

    @property
    def requested_auth_methods(self) -> list[str]:
        """The ways of logging in that were given: ``"password"``, ``"private key"``."""
        methods = []
        if self.password is not None:
            methods.append("password")
        if self.private_key is not None:
            methods.append("private key")
        return methods

    @property
    def connected(self) -> bool:
        return self._session.connected

    def connect(self) -> None:
        """Open the session (nothing to do when it is open).

        :raises SSHAuthenticationError: The host refused the password or key.
        :raises ConnectionError: The host cannot be reached, or the ssh handshake failed.
        """
        if self.connected:
            return
        methods = "/".join(self.requested_auth_methods)
        self.logger.info(f"Opening SSH connection to {self.host} as {self.user} using {methods}")
        try:
            self._session.connect()
        except _paramiko.AuthenticationFailed as err:
            raise SSHAuthenticationError(self.host, self.port, self.user, err.reason) from None
        except _paramiko.SessionError as err:
            raise ConnectionError(f"Unable to connect to {self.host}:{self.port} over SSH: {err}") from None

    def disconnect(self) -> None:
        """Close the session and every command still running on it (safe to call twice)."""
        if self._session.connected:
            self.logger.info(f"Closing SSH connection to {self.host}")
        self._session.close()

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
    ) -> SSHProcess:
        return SSHProcess(
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
            conn=self._session,
            unified_newlines=unified_newlines,
        )

    @classmethod
    def from_confdict(cls, host: Any, confdict: dict[str, Any]) -> Self:
        """The client that a host's ``conn`` section of pytest-mh's ``mhc.yaml`` describes.

        Keys (pytest-mh's): ``host`` (default: the host's address), ``port`` (22), ``username``
        (``root``), ``password``, ``private_key`` (a path), ``private_key_password`` and
        ``timeout`` (300). With neither password nor key, the password is ``Secret123``, as in pytest-mh.
        """
        address = confdict.get("host") or getattr(host, "address", None) or host.hostname
        password = confdict.get("password")
        private_key = confdict.get("private_key")
        if password is None and private_key is None:
            password = DEFAULT_PASSWORD
        return cls(
            host=str(address),
            user=str(confdict.get("username", "root")),
            password=None if password is None else str(password),
            private_key_path=private_key,
            private_key_password=confdict.get("private_key_password"),
            port=int(confdict.get("port", 22)),
            shell=host.shell,
            logger=host.logger,
            timeout=int(confdict.get("timeout", 300)),
        )


# A host's own connection is an ssh client to pytest-mh suites: frameworks open their own sessions to
# it as `SSHClient(host.conn.host, port=host.conn.port, ...)` only when `isinstance(host.conn, SSHClient)`
# (sssd-test-framework's role.ssh()), and else to the host's name, which need not resolve on the
# controller. HostConnection has pytest-mh's `host`, `port` and `user` for them.
SSHClient.register(HostConnection)
