"""``pytest_mh.conn.ssh`` without hosts: arguments, ``from_confdict``, error mapping, and the channel machinery.

The channel machinery (the pid line, exit codes, signals, the stream readers) runs here on fake
paramiko channels that play the server's part; tests/integration/compat/test_compat_sshclient_lab.py
runs the same on real sshd hosts.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import logging
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paramiko
import pytest
from paramiko.common import MSG_CHANNEL_REQUEST

from pytest_mh_ansible._private.secrets import MASK, secrets
from pytest_mh_ansible.compat import _alias
from pytest_mh_ansible.compat.conn import (
    Bash,
    Connection,
    ConnectionError,
    Powershell,
    ProcessError,
    ProcessLogLevel,
    ProcessTimeoutError,
    _paramiko,
)
from pytest_mh_ansible.compat.conn import ssh as ssh_module
from pytest_mh_ansible.compat.conn.ssh import (
    SSHAuthenticationError,
    SSHClient,
    SSHInputBuffer,
    SSHProcess,
    SSHProcessError,
    SSHProcessResult,
    SSHProcessTimeoutError,
)
from pytest_mh_ansible.compat.logger import MultihostLogger, logger_for

PASSWORD = "unit-Secret-4711"


# -- fakes: a channel that plays a server, and a transport that says it is up ----------------------------
class FakeChannel:
    """A paramiko channel whose server writes ``stdout``/``stderr`` chunks, then exits with ``rc``.

    On ``exec_command`` it answers the pid line of the command's marker first (``pid``), as a
    POSIX login shell would; ``hold`` keeps it "running" (no EOF) until :meth:`finish`.
    """

    _ids = iter(range(1, 1000))

    def __init__(
        self,
        stdout: list[bytes] | None = None,
        stderr: list[bytes] | None = None,
        *,
        rc: int = 0,
        pid: int | None = 4242,
        before: bytes = b"",
        hold: bool = False,
    ) -> None:
        self.chanid = next(self._ids)
        self.command: str | None = None
        self.written = b""
        self.eof_sent = False
        self.closed = False
        self.exit_status = -1
        self.status_event = threading.Event()
        self._stdout = list(stdout or [])
        self._stderr = list(stderr or [])
        self._rc = rc
        self._pid = pid
        self._before = before
        self._cond = threading.Condition()
        self._ended = not hold

    # paramiko's API, as RemoteCommand uses it
    def get_id(self) -> int:
        return self.chanid

    def exec_command(self, command: str) -> None:
        self.command = command
        match = re.search(r"(mh-pid-[0-9a-f]{8})", command)
        if match and self._pid is not None:
            self._stdout.insert(0, self._before + f"{match.group(1)}:{self._pid}\n".encode())
        if self._ended:
            self._exit(self._rc)

    def recv(self, size: int) -> bytes:
        return self._next(self._stdout)

    def recv_stderr(self, size: int) -> bytes:
        return self._next(self._stderr)

    def _next(self, chunks: list[bytes]) -> bytes:
        with self._cond:
            self._cond.wait_for(lambda: chunks or self._ended or self.closed)
            return chunks.pop(0) if chunks else b""

    def sendall(self, data: bytes) -> None:
        if self.eof_sent or self.closed:
            raise OSError("Socket is closed")
        self.written += data

    def shutdown_write(self) -> None:
        self.eof_sent = True

    def exit_status_ready(self) -> bool:
        return self.closed or self.status_event.is_set()

    def close(self) -> None:
        with self._cond:
            self._stdout.clear()  # closed here: what was not read is gone
            self._stderr.clear()
            self.closed = True
            self.status_event.set()
            self._cond.notify_all()

    # the server's side
    def finish(self, rc: int | None = None) -> None:
        with self._cond:
            self._ended = True
            self._cond.notify_all()
        self._exit(self._rc if rc is None else rc)

    def _exit(self, rc: int) -> None:
        if rc >= 0:
            self.exit_status = rc
        self.status_event.set()


class FakeTransport:
    def __init__(self) -> None:
        self.active = True

    def is_active(self) -> bool:
        return self.active

    def is_authenticated(self) -> bool:
        return self.active

    def close(self) -> None:
        self.active = False


class FakeSession(_paramiko.SSHSession):
    """A session "connected" to a fake transport, whose channels come from :attr:`channels`."""

    def __init__(self, *channels: FakeChannel) -> None:
        super().__init__("192.0.2.7", 22, "user1", password=PASSWORD)
        self.channels = list(channels)
        self.opened: list[FakeChannel] = []
        self.killed: list[tuple[int, int]] = []
        self._transport = FakeTransport()  # type: ignore[assignment]

    def _open_channel(self, what: str) -> Any:
        channel = self.channels.pop(0) if self.channels else FakeChannel()
        self.opened.append(channel)
        return channel

    def kill(self, pid: int, sig: int) -> None:
        self.killed.append((pid, int(sig)))
        for channel in self.opened:
            if not channel._ended:
                channel.finish(-1)


@pytest.fixture
def log() -> MultihostLogger:
    return logger_for("test", "unit")


def client_on(session: FakeSession, **kwargs: Any) -> SSHClient:
    client = SSHClient("192.0.2.7", user="user1", password=PASSWORD, **kwargs)
    client._session = session
    return client


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, Path]:
    """Private key files of each type paramiko reads, one encrypted, and a file that is no key."""
    paths: dict[str, Path] = {}
    ed = tmp_path / "id_ed25519"
    paths["ed25519"] = ed
    paramiko_ed25519_openssh(ed)
    rsa = paramiko.RSAKey.generate(1024)
    rsa.write_private_key_file(str(tmp_path / "id_rsa"))
    paths["rsa"] = tmp_path / "id_rsa"
    ecdsa = paramiko.ECDSAKey.generate()
    ecdsa.write_private_key_file(str(tmp_path / "id_ecdsa"))
    paths["ecdsa"] = tmp_path / "id_ecdsa"
    rsa.write_private_key_file(str(tmp_path / "id_rsa_enc"), password="key-pass-phrase")
    paths["encrypted"] = tmp_path / "id_rsa_enc"
    (tmp_path / "not_a_key").write_text("hello\n")
    paths["junk"] = tmp_path / "not_a_key"
    return paths


def paramiko_ed25519_openssh(path: Path) -> None:
    """An OpenSSH-format ed25519 key (paramiko cannot write one), made with the cryptography package."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    data = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    )
    path.write_bytes(data)


# -- the public API: pytest-mh's names -------------------------------------------------------------------
def test_ssh__public_names_are_pytest_mhs() -> None:
    assert sorted(ssh_module.__all__) == sorted(
        [
            "SSHAuthenticationError",
            "SSHClient",
            "SSHInputBuffer",
            "SSHProcess",
            "SSHProcessError",
            "SSHProcessResult",
            "SSHProcessTimeoutError",
        ]
    )
    assert issubclass(SSHClient, Connection)
    assert issubclass(SSHAuthenticationError, ConnectionError)
    assert issubclass(SSHProcessError, ProcessError)
    assert issubclass(SSHProcessTimeoutError, ProcessTimeoutError)


def test_ssh__served_as_pytest_mh_conn_ssh() -> None:
    _alias.install()
    served = importlib.import_module("pytest_mh.conn.ssh")
    assert served.SSHClient is SSHClient
    assert served.SSHAuthenticationError is SSHAuthenticationError


def test_ssh__paramiko_is_imported_when_a_session_needs_it_not_with_the_module() -> None:
    """A suite imports SSHClient at collection; paramiko (a tenth of a second) waits for the first session."""
    script = (
        "import sys\n"
        "from pytest_mh_ansible.compat import _alias\n"
        "_alias.install()\n"
        "from pytest_mh.conn.ssh import SSHClient\n"
        "client = SSHClient('192.0.2.1', user='user1', password='Secret123')\n"
        "print('paramiko' in sys.modules)\n"
        "from pytest_mh_ansible.compat.conn import _paramiko\n"
        "transport = _paramiko.paramiko.Transport\n"
        "print('paramiko' in sys.modules, _paramiko.paramiko is sys.modules['paramiko'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True", "True"]


def test_ssh__client_signature_is_pytest_mhs() -> None:
    params = inspect.signature(SSHClient.__init__).parameters
    assert list(params) == [
        "self",
        "host",
        "user",
        "password",
        "private_key_path",
        "private_key_password",
        "port",
        "shell",
        "logger",
        "timeout",
    ]
    assert params["host"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(params[name].kind is inspect.Parameter.KEYWORD_ONLY for name in list(params)[2:])
    assert params["port"].default == 22
    assert params["timeout"].default == 300
    assert list(inspect.signature(SSHAuthenticationError.__init__).parameters) == [
        "self",
        "host",
        "port",
        "user",
        "message",
    ]
    assert list(inspect.signature(SSHProcessResult.__init__).parameters) == [
        "self",
        "rc",
        "stdout",
        "stderr",
        "error",
        "unified_newlines",
    ]


# -- arguments -------------------------------------------------------------------------------------------
def test_client__needs_a_password_or_a_key() -> None:
    with pytest.raises(ValueError, match="give a password or a private_key_path"):
        SSHClient("192.0.2.7", user="user1")


def test_client__with_a_password(log: MultihostLogger) -> None:
    shell = Bash()
    client = SSHClient("192.0.2.7", user="user1", password=PASSWORD, port=2222, shell=shell, logger=log, timeout=7)
    assert (client.host, client.user, client.port, client.password) == ("192.0.2.7", "user1", 2222, PASSWORD)
    assert client.shell is shell
    assert client.logger is log
    assert client.timeout == 7
    assert client.private_key is None
    assert client.private_key_password is None
    assert client.requested_auth_methods == ["password"]
    assert not client.connected
    assert repr(client) == "<SSHClient user1@192.0.2.7:2222>"


def test_client__shell_and_logger_default_to_bash_and_the_layers_logger() -> None:
    client = SSHClient("192.0.2.7", user="user1", password=PASSWORD)
    assert isinstance(client.shell, Bash)
    assert isinstance(client.logger, MultihostLogger)


def test_client__password_becomes_a_secret() -> None:
    SSHClient("192.0.2.7", user="user1", password="brand-new-pw-93")
    assert secrets.mask("sshpass -p brand-new-pw-93") == f"sshpass -p {MASK}"


@pytest.mark.parametrize("kind", ["ed25519", "rsa", "ecdsa"])
def test_client__with_a_private_key(keys: dict[str, Path], kind: str) -> None:
    client = SSHClient("192.0.2.7", user="user1", private_key_path=keys[kind])
    assert client.private_key == keys[kind].read_bytes()
    assert client.requested_auth_methods == ["private key"]
    assert client.password is None


def test_client__with_an_encrypted_key_and_its_password(keys: dict[str, Path]) -> None:
    client = SSHClient(
        "192.0.2.7", user="user1", private_key_path=str(keys["encrypted"]), private_key_password="key-pass-phrase"
    )
    assert client.private_key_password == b"key-pass-phrase"
    assert secrets.mask("phrase: key-pass-phrase") == f"phrase: {MASK}"


def test_client__encrypted_key_without_its_password(keys: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="is encrypted: give its password"):
        SSHClient("192.0.2.7", user="user1", private_key_path=keys["encrypted"])


def test_client__a_file_that_is_no_key(keys: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="not a private key that paramiko reads"):
        SSHClient("192.0.2.7", user="user1", private_key_path=keys["junk"])


def test_client__a_key_file_that_is_missing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        SSHClient("192.0.2.7", user="user1", private_key_path=tmp_path / "nothing")


# -- from_confdict ---------------------------------------------------------------------------------------
class Host:
    def __init__(self, hostname: str, address: str | None = None) -> None:
        self.hostname = hostname
        if address is not None:
            self.address = address
        self.shell = Powershell()
        self.logger = logging.getLogger(f"host.{hostname}")


def test_from_confdict__defaults_are_pytest_mhs() -> None:
    host = Host("client1.test")
    client = SSHClient.from_confdict(host, {})
    assert (client.host, client.port, client.user) == ("client1.test", 22, "root")
    assert client.password == "Secret123"
    assert client.private_key is None
    assert client.timeout == 300
    assert client.shell is host.shell
    assert client.logger is host.logger


def test_from_confdict__the_hosts_address_before_its_name() -> None:
    assert SSHClient.from_confdict(Host("client1", "10.0.0.5"), {}).host == "10.0.0.5"


def test_from_confdict__every_key(keys: dict[str, Path]) -> None:
    confdict = {
        "type": "ssh",
        "host": "192.0.2.9",
        "port": "2022",
        "username": "admin",
        "password": "pw-from-mhc-1",
        "private_key": str(keys["encrypted"]),
        "private_key_password": "key-pass-phrase",
        "timeout": 60,
    }
    client = SSHClient.from_confdict(Host("client1"), confdict)
    assert (client.host, client.port, client.user, client.password) == ("192.0.2.9", 2022, "admin", "pw-from-mhc-1")
    assert client.private_key == keys["encrypted"].read_bytes()
    assert client.private_key_password == b"key-pass-phrase"
    assert client.timeout == 60
    assert client.requested_auth_methods == ["password", "private key"]


def test_from_confdict__a_key_alone_means_no_password(keys: dict[str, Path]) -> None:
    client = SSHClient.from_confdict(Host("client1"), {"private_key": str(keys["ed25519"])})
    assert client.password is None
    assert client.requested_auth_methods == ["private key"]


# -- errors: where, who, and never the password ----------------------------------------------------------
def test_authentication_error__message_and_attributes() -> None:
    error = SSHAuthenticationError("10.0.0.5", 22, "user1", "password: Authentication failed.")
    assert str(error) == "Unable to authenticate as 'user1' at 10.0.0.5:22 over SSH: password: Authentication failed."
    assert (error.host, error.port, error.user) == ("10.0.0.5", 22, "user1")


def test_connect__refused_credentials_raise_authentication_error(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    client = SSHClient("192.0.2.7", user="user1", password=PASSWORD)

    def refuse() -> None:
        raise _paramiko.AuthenticationFailed("user1@192.0.2.7:22", "password: Authentication failed.")

    monkeypatch.setattr(client._session, "connect", refuse)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(SSHAuthenticationError) as info:
        client.connect()
    assert "user1" in str(info.value)
    assert "192.0.2.7:22" in str(info.value)
    assert "Authentication failed" in str(info.value)
    assert info.value.__cause__ is None
    assert PASSWORD not in str(info.value)
    assert PASSWORD not in caplog.text
    assert "using password" in caplog.text


def test_connect__a_closed_port_is_a_connection_error_not_an_authentication_error() -> None:
    with socket.socket() as probe:  # a loopback port that nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = SSHClient("127.0.0.1", user="user1", password=PASSWORD, port=port)
    with pytest.raises(ConnectionError, match=f"Unable to connect to 127.0.0.1:{port} over SSH") as info:
        client.connect()
    assert not isinstance(info.value, SSHAuthenticationError)
    assert not client.connected


def test_session__authentication_tries_the_key_then_the_password(monkeypatch: pytest.MonkeyPatch) -> None:
    tried: list[str] = []

    class Transport:
        authenticated = False

        def auth_publickey(self, user: str, key: Any) -> list[str]:
            tried.append(f"key:{user}")
            raise paramiko.AuthenticationException("Authentication failed.")

        def auth_password(self, user: str, password: str) -> list[str]:
            tried.append(f"password:{user}")
            self.authenticated = password == PASSWORD
            if not self.authenticated:
                raise paramiko.AuthenticationException("Authentication failed.")
            return []

        def is_authenticated(self) -> bool:
            return self.authenticated

    key = paramiko.ECDSAKey.generate()
    session = _paramiko.SSHSession("192.0.2.7", 22, "user1", password=PASSWORD, private_key=key)
    session._authenticate(Transport())  # type: ignore[arg-type]
    assert tried == ["key:user1", "password:user1"]

    tried.clear()
    wrong = _paramiko.SSHSession("192.0.2.7", 22, "user1", password="not-it", private_key=key)
    with pytest.raises(_paramiko.AuthenticationFailed) as info:
        wrong._authenticate(Transport())  # type: ignore[arg-type]
    assert info.value.reason == "public key: Authentication failed.; password: Authentication failed."
    assert "not-it" not in str(info.value)


# -- the command line, the pid line and the streams ------------------------------------------------------
def test_start__the_command_runs_behind_a_pid_line_and_exec() -> None:
    channel = FakeChannel([b"out\n"])
    session = FakeSession(channel)
    command = session.start("/usr/bin/env bash -c 'echo out'")
    assert channel.command is not None
    assert re.fullmatch(
        r"printf '%s:%s\\n' mh-pid-[0-9a-f]{8} \"\$\$\"; exec /usr/bin/env bash -c 'echo out'", channel.command
    )
    assert command.read_stdout() == b"out\n"
    assert command.wait_pid(1) == 4242


def test_start__without_pid_line_for_powershell() -> None:
    channel = FakeChannel([b"out\n"], pid=None)
    command = FakeSession(channel).start("powershell -Command 'x'", report_pid=False)
    assert channel.command == "powershell -Command 'x'"
    assert command.read_stdout() == b"out\n"
    with pytest.raises(_paramiko.SessionError, match="pid is unknown"):
        command.wait_pid(1)


def test_read_stdout__keeps_what_a_login_script_printed_before_the_pid_line() -> None:
    channel = FakeChannel([b"rest\n"], before=b"motd line\n")
    command = FakeSession(channel).start("true")
    assert command.read_stdout() == b"motd line\n"
    assert command.read_stdout() == b"rest\n"
    assert command.read_stdout() == b""
    assert command.pid == 4242


def test_read_stdout__a_pid_line_split_over_chunks() -> None:
    channel = FakeChannel(pid=None)
    command = FakeSession(channel).start("true")
    marker = re.search(r"mh-pid-[0-9a-f]{8}", channel.command or "")
    assert marker is not None
    channel._stdout[:] = [marker.group(0)[:5].encode(), marker.group(0)[5:].encode() + b":77", b"\nhello"]
    assert command.read_stdout() == b"hello"
    assert command.pid == 77


def test_read_stdout__a_line_with_another_marker_is_output() -> None:
    channel = FakeChannel([b"mh-pid-00000000:1\n"], pid=None)
    command = FakeSession(channel).start("true")
    assert command.read_stdout() == b"mh-pid-00000000:1\n"
    with pytest.raises(_paramiko.SessionError, match="pid is unknown"):
        command.wait_pid(1)


def test_exit_code__status_signal_or_lost() -> None:
    session = FakeSession()
    command = session.start("true")
    assert command.exit_code(1) == 0

    killed = FakeChannel(hold=True)
    command = FakeSession(killed).start("sleep 30")
    command.session._exit_signals[killed.chanid] = "TERM"
    killed.finish(-1)
    assert command.exit_code(1) == 128 + signal.SIGTERM

    lost = FakeChannel(hold=True)
    command = FakeSession(lost).start("sleep 30")
    lost.close()
    assert command.exit_code(1) == _paramiko.LOST_EXIT_STATUS

    running = FakeChannel(hold=True)
    command = FakeSession(running).start("sleep 30")
    with pytest.raises(_paramiko.CommandTimedOut):
        command.exit_code(0.05)


def test_exit_signals__caught_per_transport_and_forwarded() -> None:
    forwarded: list[str] = []
    session = _paramiko.SSHSession("192.0.2.7", 22, "user1", password=PASSWORD)

    class Transport:
        _channel_handler_table = {MSG_CHANNEL_REQUEST: lambda channel, message: forwarded.append(message.get_text())}

    transport = Transport()
    session._watch_exit_signals(transport)  # type: ignore[arg-type]
    assert (
        Transport._channel_handler_table[MSG_CHANNEL_REQUEST]
        is not transport._channel_handler_table[MSG_CHANNEL_REQUEST]
    ), "the class's table must stay paramiko's"
    channel = FakeChannel()
    for request in ("exit-signal", "exit-status"):
        message = paramiko.Message()
        message.add_string(request)
        message.add_boolean(False)
        message.add_string("KILL")
        message.rewind()
        transport._channel_handler_table[MSG_CHANNEL_REQUEST](channel, message)
    assert forwarded == ["exit-signal", "exit-status"]
    assert session.exit_signal(channel) == "KILL"  # type: ignore[arg-type]
    session.forget(channel)  # type: ignore[arg-type]
    assert session.exit_signal(channel) is None  # type: ignore[arg-type]


def test_signal_name() -> None:
    assert _paramiko.signal_name(signal.SIGTERM) == "TERM"
    assert _paramiko.signal_name(9) == "KILL"
    with pytest.raises(ValueError, match="not a signal number"):
        _paramiko.signal_name(4711)


# -- SSHProcess on fake channels -------------------------------------------------------------------------
def test_run__output_lines_exit_code_and_error() -> None:
    channel = FakeChannel([b"one\ntw", b"o\nthree"], [b"warn\n"], rc=3)
    client = client_on(FakeSession(channel))
    result = client.run("printf stuff", raise_on_error=False, log_level=ProcessLogLevel.Silent)
    assert isinstance(result, SSHProcessResult)
    assert result.rc == 3
    assert result.stdout_lines == ["one", "two", "three"]
    assert result.stdout == "one\ntwo\nthree"
    assert result.stderr == "warn"
    assert isinstance(result.error, SSHProcessError)
    assert result.error.rc == 3
    assert channel.eof_sent
    assert channel.closed
    with pytest.raises(SSHProcessError):
        client_on(FakeSession(FakeChannel(rc=1))).run("false", log_level=ProcessLogLevel.Silent)


def test_run__input_env_cwd_and_unified_newlines() -> None:
    channel = FakeChannel([b"a\r\nb\r\n"])
    client = client_on(FakeSession(channel))
    result = client.run(
        "cat", input="data", env={"A": "x y"}, cwd="/tmp", unified_newlines=True, log_level=ProcessLogLevel.Silent
    )
    assert channel.written == b"data"
    assert channel.command is not None
    assert "export A=" in channel.command
    assert "x y" in channel.command
    assert "cd /tmp" in channel.command
    assert result.stdout_lines == ["a", "b"]


def test_run__input_the_command_did_not_read_is_no_error() -> None:
    ended = FakeChannel([b"done\n"], rc=3)
    ended.closed = True  # the server closed the channel: the command ended before reading its input
    result = client_on(FakeSession(ended)).run("exit 3", input="x", raise_on_error=False)
    assert (result.rc, result.stdout) == (3, "done")

    running = FakeChannel(hold=True)
    running.eof_sent = True  # writing fails while the command still runs: that is an error
    with pytest.raises(ConnectionError, match="cannot write to the command's stdin"):
        client_on(FakeSession(running)).run("cat", input="x")
    assert running.closed


def test_async_run__stdin_stdout_and_wait() -> None:
    channel = FakeChannel(hold=True)
    client = client_on(FakeSession(channel))
    process = client.async_run("cat", log_level=ProcessLogLevel.Silent)
    assert isinstance(process, SSHProcess)
    assert process.in_progress
    assert isinstance(process.stdin, SSHInputBuffer)
    process.stdin.write("Hello\n")
    assert channel.written == b"Hello\n"
    with channel._cond:
        channel._stdout.append(b"Hello\n")
        channel._cond.notify_all()
    assert next(process.stdout) == "Hello"
    process.send_eof()
    assert channel.eof_sent
    with pytest.raises(ConnectionError, match="stdin is closed"):
        process.stdin.write("late")
    channel.finish()
    result = process.wait()
    assert result.stdout_lines == ["Hello"]
    assert not process.in_progress
    for name in ("stdout", "stderr", "stdin"):
        with pytest.raises(RuntimeError, match="not running"):
            getattr(process, name)
    with pytest.raises(RuntimeError, match="not running"):
        process.send_eof()
    with pytest.raises(RuntimeError, match="not running"):
        process.send_signal(signal.SIGTERM)


def test_send_signal__kills_the_process_group_by_pid() -> None:
    channel = FakeChannel(hold=True, pid=5150)
    session = FakeSession(channel)
    process = client_on(session).async_run("sleep 30", log_level=ProcessLogLevel.Silent)
    process.send_signal(signal.SIGTERM)
    assert session.killed == [(5150, signal.SIGTERM)]
    session._exit_signals[channel.chanid] = "TERM"
    result = process.wait(raise_on_error=False)
    assert result.rc == 143


def test_with_process__waits_on_exit() -> None:
    channel = FakeChannel([b"done\n"], hold=True)
    client = client_on(FakeSession(channel))
    threading.Timer(0.1, channel.finish).start()
    with client.async_run("sleep 0.1; echo done", log_level=ProcessLogLevel.Silent) as process:
        pass
    assert not process.in_progress
    assert channel.closed


def test_wait__timeout_kills_the_command_and_keeps_its_output() -> None:
    channel = FakeChannel([b"before\n"], hold=True, pid=808)
    session = FakeSession(channel)
    client = client_on(session, timeout=1)
    with pytest.raises(SSHProcessTimeoutError) as info:
        client.run("echo before; sleep 30", timeout=0.2, log_level=ProcessLogLevel.Silent)  # type: ignore[arg-type]
    assert info.value.timeout == 0.2
    assert info.value.stdout_lines == ["before"]
    assert session.killed == [(808, signal.SIGKILL)]
    assert channel.closed


def test_disconnect__closes_the_session() -> None:
    session = FakeSession()
    client = client_on(session)
    assert client.connected
    client.disconnect()
    assert not client.connected
    client.disconnect()


@pytest.fixture(autouse=True)
def _no_stray_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    stray = [t for t in threading.enumerate() if t not in before and t.is_alive() and t.name.startswith("mh-ssh")]
    for thread in stray:
        thread.join(2)
    assert not [t for t in stray if t.is_alive()], "reader threads left running"


def test_client__dropped_without_disconnect_closes_its_connection() -> None:
    client = SSHClient("192.0.2.7", user="user1", password=PASSWORD)
    session = client._session
    session._transport = FakeTransport()  # type: ignore[assignment]
    assert session.connected
    del client
    gc.collect()
    assert not session.connected
