"""Unit tests of ``pytest_mh_ansible.conn``: results, command building and masking, with a fake transport."""

from __future__ import annotations

import logging
import os
import subprocess
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any

import pytest

from pytest_mh_ansible._private.secrets import secrets
from pytest_mh_ansible.conn import Connection, ProcessResult, build_command
from pytest_mh_ansible.errors import ProcessError, ProcessTimeoutError


@dataclass
class FakeTransport:
    """Runs commands with the local /bin/sh and records every call."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    closed: int = 0
    connected: int = 0
    raise_exc: Exception | None = None

    def connect(self) -> None:
        self.connected += 1

    def close(self) -> None:
        self.closed += 1

    def exec(
        self,
        command: str,
        *,
        input: bytes | None = None,
        become: bool | None = None,
        become_user: str | None = None,
        timeout: float | None = None,
    ) -> tuple[int, bytes, bytes]:
        self.calls.append(
            {"command": command, "input": input, "become": become, "become_user": become_user, "timeout": timeout}
        )
        if self.raise_exc is not None:
            raise self.raise_exc
        proc = subprocess.run(["/bin/sh", "-c", command], input=input or b"", capture_output=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr

    def put(self, local: str | os.PathLike[str], remote: str) -> None:
        self.calls.append({"put": (os.fspath(local), remote)})

    def get(self, remote: str, local: str | os.PathLike[str]) -> None:
        self.calls.append({"get": (remote, os.fspath(local))})


@pytest.fixture
def fake() -> FakeTransport:
    return FakeTransport()


@pytest.fixture
def conn(fake: FakeTransport) -> Connection:
    return Connection("client1", {"ansible_host": "10.0.0.1"}, transport=fake)


@pytest.fixture(autouse=True)
def _clean_secrets() -> Any:
    yield
    secrets.clear()


def test_process_result__properties() -> None:
    result = ProcessResult(rc=0, stdout="a\nb\n", stderr="e1\n", command="x", host="h")
    assert result.stdout_lines == ["a", "b"]
    assert result.stderr_lines == ["e1"]
    assert result.succeeded
    assert result.throw() is result
    with pytest.raises(FrozenInstanceError):
        result.rc = 1  # type: ignore[misc]


def test_process_result__throw_raises_with_data() -> None:
    result = ProcessResult(rc=3, stdout="out", stderr="err", command="false", host="h")
    assert not result.succeeded
    with pytest.raises(ProcessError) as info:
        result.throw()
    assert (info.value.host, info.value.command, info.value.rc) == ("h", "false", 3)
    assert "h: command 'false' exited with code 3" in str(info.value)
    assert "err" in str(info.value)


def test_run__stdout_stderr_rc_separate(conn: Connection) -> None:
    result = conn.run("echo out; echo err >&2; exit 3", raise_on_error=False)
    assert (result.rc, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert result.command == "echo out; echo err >&2; exit 3"
    assert result.host == "client1"


def test_run__raises_on_error_by_default(conn: Connection) -> None:
    with pytest.raises(ProcessError) as info:
        conn.run("exit 4")
    assert info.value.rc == 4


def test_run__input_str_is_encoded(conn: Connection, fake: FakeTransport) -> None:
    assert conn.run("cat", input="héllo").stdout == "héllo"
    assert fake.calls[-1]["input"] == "héllo".encode()


def test_run__passes_become_and_timeout(conn: Connection, fake: FakeTransport) -> None:
    conn.run("true", become=True, become_user="nobody", timeout=5)
    assert fake.calls[-1] | {"command": None} == {
        "command": None,
        "input": None,
        "become": True,
        "become_user": "nobody",
        "timeout": 5,
    }


def test_build_command__plain_command_unchanged() -> None:
    assert build_command("echo $HOME | wc -c") == "echo $HOME | wc -c"


@pytest.mark.parametrize(
    "value",
    ["plain", "with space", "it's", '"double"', "$(touch /tmp/mh-should-not-exist)", "`id`", "a;b&&c", "*", ""],
)
def test_run__env_values_are_quoted(conn: Connection, value: str) -> None:
    result = conn.run('printf %s "$MH_VALUE"', env={"MH_VALUE": value})
    assert result.stdout == value
    assert not os.path.exists("/tmp/mh-should-not-exist")


def test_run__env_several_variables(conn: Connection) -> None:
    assert conn.run('echo "$A-$B"', env={"A": "1", "B": "2"}).stdout == "1-2\n"


def test_build_command__rejects_bad_env_name() -> None:
    with pytest.raises(ValueError, match="'A B'"):
        build_command("true", env={"A B": "x"})


def test_run__cwd_with_odd_name(conn: Connection, tmp_path: Any) -> None:
    odd = tmp_path / "dir with 'quote' and $x"
    odd.mkdir()
    assert conn.run("pwd", cwd=str(odd)).stdout == f"{odd}\n"
    assert conn.run("pwd; echo $V", cwd=str(odd), env={"V": "v"}).stdout == f"{odd}\nv\n"


def test_run__cwd_missing_does_not_run_command(conn: Connection, tmp_path: Any) -> None:
    marker = tmp_path / "ran"
    result = conn.run(f"touch {marker}; touch {marker}", cwd=str(tmp_path / "nope"), raise_on_error=False)
    assert result.rc != 0
    assert not marker.exists()


def test_run__cwd_keeps_trailing_comment_and_background(conn: Connection, tmp_path: Any) -> None:
    assert conn.run("echo x # comment", cwd=str(tmp_path)).stdout == "x\n"
    assert conn.run("true &", cwd=str(tmp_path)).rc == 0


def test_run__secret_masked_in_process_error(conn: Connection) -> None:
    connection = Connection("h", {"ansible_become_password": "Sup3rS3cret"}, transport=FakeTransport())
    with pytest.raises(ProcessError) as info:
        connection.run("echo Sup3rS3cret; echo Sup3rS3cret >&2; exit 1")
    text = str(info.value)
    assert "Sup3rS3cret" not in text
    assert "********" in text
    assert "Sup3rS3cret" not in info.value.command
    del conn


def test_run__secret_masked_in_logs(caplog: pytest.LogCaptureFixture) -> None:
    connection = Connection("h", {"api_token": "T0ken-value"}, transport=FakeTransport())
    with caplog.at_level(1, logger="pytest_mh_ansible.conn"):
        connection.run("echo T0ken-value", raise_on_error=False)
        connection.run("echo T0ken-value >&2; exit 2", raise_on_error=False)
    assert "T0ken-value" not in caplog.text
    assert "h: echo ******** -> rc=0" in caplog.text
    assert any(r.levelno == logging.DEBUG and "stderr" in r.getMessage() for r in caplog.records)


def test_run__transport_errors_propagate(fake: FakeTransport, conn: Connection) -> None:
    fake.raise_exc = ProcessTimeoutError("client1", "sleep 9", 1.0)
    with pytest.raises(ProcessTimeoutError):
        conn.run("sleep 9", timeout=1)


def test_put_get_connect_close_delegate(conn: Connection, fake: FakeTransport) -> None:
    conn.connect()
    conn.put("a", "/b")
    conn.get("/b", "c")
    conn.close()
    assert fake.connected == 1
    assert fake.closed == 1
    assert fake.calls == [{"put": ("a", "/b")}, {"get": ("/b", "c")}]
