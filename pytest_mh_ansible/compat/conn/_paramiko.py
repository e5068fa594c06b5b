"""An ssh session of its own on paramiko: any user, a password or a key, one channel per command.

This is the machinery under ``pytest_mh.conn.ssh.SSHClient`` (``compat/conn/ssh.py``): a test
logs in to a host as a test user, with that user's password or key, to test logins, PAM,
password changes, ``su`` and ``sudo`` as that user. It talks to paramiko directly (a
``Transport`` over our own socket), not through an Ansible connection plugin, so it works on
every ansible-core this project supports (2.21 removed the ``paramiko`` plugin).

What it does on purpose:

* ``TCP_NODELAY`` on the socket: without it each command waits some 40 ms more, as Nagle's
  algorithm meets the server's delayed ACK (on lab hosts: 4 ms a command idle, 10-17 ms on a
  busy machine, against 48-60 ms without).
* Host keys are not checked: sessions go to lab and test hosts that are rebuilt at will
  (pytest-mh does not check them either).
* Each command runs on its own channel, stdout and stderr apart, stdin streamed.
* Signals: an ssh channel's ``signal`` request is not delivered by every server, and paramiko
  has no call for it. So the command runs behind a line that prints the login shell's pid
  (with a marker of its own) and then ``exec``\\ s the command in that same process; a
  signal is sent with ``kill`` through a second channel to that pid's process group, which
  sshd made for the command (as OpenSSH's own ``signal`` request does with ``killpg``).

Example::

    session = SSHSession("10.213.0.11", 22, "user1", password="Secret123")
    session.connect()
    command = session.start("/usr/bin/env bash -c 'sleep 30'")
    # (a thread reads command.read_stdout() until b"", another read_stderr())
    session.kill(command.wait_pid(10.0), signal.SIGTERM)
    command.exit_code(10.0)  # 143
    session.close()
"""

from __future__ import annotations

import io
import re
import secrets
import signal
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import paramiko

__all__ = [
    "CONNECT_TIMEOUT",
    "KILL_TIMEOUT",
    "LOST_EXIT_STATUS",
    "AuthenticationFailed",
    "CommandTimedOut",
    "RemoteCommand",
    "SSHSession",
    "SessionError",
    "load_private_key",
    "signal_name",
]

CONNECT_TIMEOUT: Final = 30.0
"""Seconds for the TCP connection, the ssh handshake and each authentication step."""

KILL_TIMEOUT: Final = 30.0
"""Seconds that the ``kill`` command sending a signal may take."""

LOST_EXIT_STATUS: Final = 255
"""The exit code of a command whose channel closed with neither exit status nor signal (a lost connection).

OpenSSH's ``ssh`` exits with 255 then too.
"""


class _ImportedOnFirstUse:
    """Stands in for the ``paramiko`` module until a session needs it, then puts the module in its place.

    Importing paramiko costs a tenth of a second (it imports ``invoke`` and ``cryptography``), and
    a suite imports ``SSHClient`` at collection whether or not a test logs in with it: with this,
    only a run that opens a session pays for it.
    """

    def __getattr__(self, name: str) -> Any:
        import paramiko as module

        globals()["paramiko"] = module
        return getattr(module, name)


if not TYPE_CHECKING:
    paramiko = _ImportedOnFirstUse()

_CHUNK: Final = 65536
_HEAD_LIMIT: Final = 65536  # output before the pid line beyond which none is looked for
_PID_LINE: Final = re.compile(rb"(?:^|\n)(mh-pid-[0-9a-f]{8}):([0-9]+)\n")


class SessionError(Exception):
    """The session could not be opened (address, network, handshake), or it broke."""


class AuthenticationFailed(SessionError):
    """The server took none of the credentials given (wrong password, unknown key, locked account).

    ``reason`` is what failed, without where (``password: Authentication failed.``).
    """

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.reason = reason


class CommandTimedOut(SessionError):
    """A command did not finish in the time it had; what it wrote so far stays in its buffers."""

    def __init__(self, message: str, timeout: float) -> None:
        super().__init__(message)
        self.timeout = timeout


def signal_name(sig: int) -> str:
    """The name ``kill -s`` takes for ``sig``: ``TERM`` for ``signal.SIGTERM`` or 15."""
    try:
        return signal.Signals(sig).name.removeprefix("SIG")
    except ValueError:
        raise ValueError(f"{sig!r} is not a signal number") from None


def load_private_key(data: bytes, password: str | None, *, source: str = "the private key") -> paramiko.PKey:
    """Read an OpenSSH or PEM private key (ed25519, ECDSA or RSA) from its file's bytes.

    :param source: What to call the key in messages (its path).
    :raises ValueError: Not a key paramiko reads, or an encrypted key without (or with a wrong) password.
    """
    text = data.decode("utf-8", errors="replace")
    problems: list[str] = []
    key_types: tuple[type[paramiko.PKey], ...] = (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey)
    for key_type in key_types:
        try:
            return key_type.from_private_key(io.StringIO(text), password=password)
        except paramiko.PasswordRequiredException:
            raise ValueError(f"{source} is encrypted: give its password (private_key_password)") from None
        except (paramiko.SSHException, ValueError, TypeError, IndexError) as err:
            problems.append(f"{key_type.__name__}: {err}")
    raise ValueError(f"{source}: not a private key that paramiko reads (ed25519, ECDSA, RSA): {'; '.join(problems)}")


class SSHSession:
    """One authenticated ssh connection to ``host``:``port`` as ``user``.

    :param password: The user's password (also answers keyboard-interactive prompts when the
        server offers no plain password authentication).
    :param private_key: The private key (a :class:`paramiko.PKey`), tried before the password.
    """

    def __init__(
        self,
        host: str,
        port: int,
        user: str,
        *,
        password: str | None = None,
        private_key: paramiko.PKey | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        self.host = host
        self.port = port
        self.user = user
        self._password = password
        self._private_key = private_key
        self.connect_timeout = connect_timeout
        self._transport: paramiko.Transport | None = None
        self._exit_signals: dict[int, str] = {}
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        """``user@host:port``, for messages."""
        return f"{self.user}@{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        """True while the connection is up and authenticated."""
        transport = self._transport
        return transport is not None and transport.is_active() and transport.is_authenticated()

    # -- life ----------------------------------------------------------------------------------------
    def connect(self) -> None:
        """Open and authenticate the connection (nothing to do when it is up).

        :raises SessionError: The host cannot be reached or the ssh handshake fails.
        :raises AuthenticationFailed: The server refused the credentials.
        """
        with self._lock:
            if self.connected:
                return
            self._drop()
            try:
                sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout)
            except OSError as err:
                raise SessionError(f"{self.host}:{self.port}: cannot connect: {err}") from err
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            transport = paramiko.Transport(sock)
            transport.banner_timeout = self.connect_timeout
            transport.auth_timeout = self.connect_timeout
            try:
                transport.start_client(timeout=self.connect_timeout)
            except (paramiko.SSHException, OSError, EOFError) as err:
                transport.close()
                raise SessionError(f"{self.host}:{self.port}: ssh handshake failed: {err}") from err
            try:
                self._authenticate(transport)
            except BaseException:
                transport.close()
                raise
            self._watch_exit_signals(transport)
            self._transport = transport

    def close(self) -> None:
        """Close the connection and every channel on it (safe to call twice)."""
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        transport, self._transport = self._transport, None
        self._exit_signals.clear()
        if transport is not None:
            transport.close()

    def _authenticate(self, transport: paramiko.Transport) -> None:
        problems: list[str] = []
        if self._private_key is not None:
            try:
                transport.auth_publickey(self.user, self._private_key)
            except paramiko.AuthenticationException as err:
                problems.append(f"public key: {err}")
            except (paramiko.SSHException, OSError, EOFError) as err:
                raise AuthenticationFailed(self.where, f"public key authentication broke off: {err}") from err
            if transport.is_authenticated():
                return
        if self._password is not None:
            try:
                transport.auth_password(self.user, self._password)
            except paramiko.AuthenticationException as err:
                problems.append(f"password: {err}")
            except (paramiko.SSHException, OSError, EOFError) as err:
                raise AuthenticationFailed(self.where, f"password authentication broke off: {err}") from err
            if transport.is_authenticated():
                return
        if not problems:
            problems.append("no password or key to authenticate with")
        raise AuthenticationFailed(self.where, "; ".join(problems))

    def _watch_exit_signals(self, transport: paramiko.Transport) -> None:
        # paramiko drops the "exit-signal" request (a command killed by a signal): catch it, per transport,
        # so that such a command reads as 128 + the signal number, as a shell reports it.
        from paramiko.common import MSG_CHANNEL_REQUEST

        table = getattr(type(transport), "_channel_handler_table", None)
        if not isinstance(table, dict) or MSG_CHANNEL_REQUEST not in table:
            return
        forward: Callable[[paramiko.Channel, paramiko.Message], Any] = table[MSG_CHANNEL_REQUEST]
        signals = self._exit_signals

        def handle(channel: paramiko.Channel, message: paramiko.Message) -> Any:
            start = message.packet.tell()
            if message.get_text() == "exit-signal":
                message.get_boolean()
                signals[channel.get_id()] = message.get_text()
            message.packet.seek(start)
            return forward(channel, message)

        transport._channel_handler_table = {**table, MSG_CHANNEL_REQUEST: handle}  # type: ignore[attr-defined]

    # -- commands ------------------------------------------------------------------------------------
    def _open_channel(self, what: str) -> paramiko.Channel:
        transport = self._transport
        if transport is None or not self.connected:
            raise SessionError(f"{self.where}: not connected")
        try:
            return transport.open_session(timeout=self.connect_timeout)
        except (paramiko.SSHException, OSError, EOFError) as err:
            raise SessionError(f"{self.where}: cannot open a channel for {what}: {err}") from err

    def start(self, command: str, *, report_pid: bool = True) -> RemoteCommand:
        """Start ``command`` (run by the user's login shell) on a channel of its own.

        :param report_pid: Put the pid line in front (needs a POSIX login shell); without it,
            :meth:`kill` cannot reach the command.
        :raises SessionError: Not connected, or the server refused the channel or the command.
        """
        channel = self._open_channel("a command")
        marker = f"mh-pid-{secrets.token_hex(4)}" if report_pid else None
        line = command if marker is None else f"printf '%s:%s\\n' {marker} \"$$\"; exec {command}"
        try:
            channel.exec_command(line)
        except (paramiko.SSHException, OSError, EOFError) as err:
            channel.close()
            raise SessionError(f"{self.where}: the server refused to run a command: {err}") from err
        return RemoteCommand(self, channel, marker)

    def exit_signal(self, channel: paramiko.Channel) -> str | None:
        """The name of the signal that killed the command of ``channel`` (``TERM``), if one did."""
        return self._exit_signals.get(channel.get_id())

    def forget(self, channel: paramiko.Channel) -> None:
        """Drop what was noted about ``channel`` (it is being closed)."""
        self._exit_signals.pop(channel.get_id(), None)

    def kill(self, pid: int, sig: int) -> None:
        """Send ``sig`` to the process group of ``pid`` (else to ``pid`` alone) with ``kill`` on a new channel.

        A process that is gone already is not an error: signals race with exits.

        :raises SessionError: The signal could not be sent (no channel, ``kill`` hung).
        """
        name = signal_name(sig)
        line = f"kill -s {name} -- -{pid} 2>/dev/null || kill -s {name} {pid} 2>/dev/null"
        command = self.start(line, report_pid=False)
        try:
            command.shutdown_write()
            command.exit_code(KILL_TIMEOUT)
        except CommandTimedOut:
            raise SessionError(f"{self.where}: 'kill -s {name} {pid}' did not finish in {KILL_TIMEOUT:g} s") from None
        finally:
            command.close()


class RemoteCommand:
    """A command running on one channel: its stdin, its two output streams and its exit code.

    :meth:`read_stdout` and :meth:`read_stderr` block until the next chunk (``b""`` at the end);
    read each from a thread of its own, so that a command writing much to one stream is never
    stopped by a full window while the other is read. :meth:`read_stdout` takes the pid line
    out of the stream; :meth:`wait_pid` gives the pid it held.
    """

    def __init__(self, session: SSHSession, channel: paramiko.Channel, marker: str | None) -> None:
        self.session = session
        self.channel = channel
        self.pid: int | None = None
        self._marker = marker
        self._head = b""
        self._pid_read = threading.Event()
        if marker is None:
            self._pid_read.set()
        self._stdin_closed = False

    # -- input ---------------------------------------------------------------------------------------
    def write(self, data: bytes) -> None:
        """Write ``data`` to the command's stdin (blocks while the server's window is full).

        :raises SessionError: EOF was sent already, or the channel broke.
        """
        if self._stdin_closed:
            raise SessionError(f"{self.session.where}: the command's stdin is closed (EOF was sent)")
        try:
            self.channel.sendall(data)
        except (paramiko.SSHException, OSError, EOFError) as err:
            raise SessionError(f"{self.session.where}: cannot write to the command's stdin: {err}") from err

    def shutdown_write(self) -> None:
        """Send EOF to the command's stdin (safe to call twice, and after the channel closed)."""
        if not self._stdin_closed:
            self._stdin_closed = True
            if not self.channel.closed:
                self.channel.shutdown_write()

    # -- output --------------------------------------------------------------------------------------
    def read_stdout(self) -> bytes:
        """The next chunk of stdout (blocking), ``b""`` at its end; the pid line is left out."""
        while True:
            data = self._receive(self.channel.recv)
            if self._marker is None:
                return data
            if not data:  # the stream ended before any pid line: whatever came is output
                return self._give_up_pid()
            self._head += data
            rest = self._take_pid_line()
            if rest is None:
                if len(self._head) > _HEAD_LIMIT:
                    return self._give_up_pid()
                continue
            if rest:
                return rest

    def read_stderr(self) -> bytes:
        """The next chunk of stderr (blocking), ``b""`` at its end."""
        return self._receive(self.channel.recv_stderr)

    def _receive(self, recv: Callable[[int], bytes]) -> bytes:
        try:
            return recv(_CHUNK)
        except (paramiko.SSHException, OSError, EOFError):
            return b""

    def _take_pid_line(self) -> bytes | None:
        match = _PID_LINE.search(self._head)
        if match is None or match.group(1).decode() != self._marker:
            return None
        # What a login script printed before the line stays output; the line itself goes.
        start = match.start() + (1 if match.group(0).startswith(b"\n") else 0)
        rest = self._head[:start] + self._head[match.end() :]
        self.pid = int(match.group(2))
        self._head = b""
        self._marker = None
        self._pid_read.set()
        return rest

    def _give_up_pid(self) -> bytes:
        head, self._head = self._head, b""
        self._marker = None
        self._pid_read.set()
        return head

    # -- pid, exit -----------------------------------------------------------------------------------
    def wait_pid(self, timeout: float) -> int:
        """The command's pid (its process group's), once stdout's reader has met the pid line.

        :raises SessionError: The command runs without a pid line, or its stdout ended without one.
        :raises CommandTimedOut: No pid line within ``timeout`` seconds (is stdout being read?).
        """
        if not self._pid_read.wait(timeout):
            raise CommandTimedOut(f"{self.session.where}: the command printed no pid line in {timeout:g} s", timeout)
        if self.pid is None:
            raise SessionError(f"{self.session.where}: the command's pid is unknown (its login shell printed none)")
        return self.pid

    @property
    def ended(self) -> bool:
        """True once the server closed the channel: the command is over, its output is left to read."""
        return bool(self.channel.closed)

    @property
    def finished(self) -> bool:
        """True once the command's exit status (or the channel's close) arrived."""
        return bool(self.channel.exit_status_ready())

    def exit_code(self, timeout: float | None = None) -> int:
        """The command's exit code, once it arrived (``None``: wait as long as it takes).

        A command killed by a signal exits with 128 + the signal's number, as a shell reports it;
        one whose channel closed with neither gets :data:`LOST_EXIT_STATUS`.

        :raises CommandTimedOut: No exit status within ``timeout`` seconds.
        """
        if not self.channel.status_event.wait(timeout):
            raise CommandTimedOut(f"{self.session.where}: the command did not finish in {timeout:g} s", timeout or 0)
        status = self.channel.exit_status
        if status >= 0:
            return int(status)
        name = self.session.exit_signal(self.channel)
        if name is not None and f"SIG{name}" in signal.Signals.__members__:
            return 128 + int(signal.Signals[f"SIG{name}"])
        return LOST_EXIT_STATUS

    def close(self) -> None:
        """Close the channel (sshd hangs up the command's pipes); safe to call twice."""
        self.session.forget(self.channel)
        self.channel.close()
