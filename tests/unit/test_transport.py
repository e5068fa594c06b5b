"""The transport's process-wide preparation of Ansible, and its errors before any connection."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_mh_ansible import HostUnreachableError
from pytest_mh_ansible._private.ansible import compat, runtime, transport


def test_transport__ssh_askpass_helper_found_without_the_virtualenv_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = str(Path(sys.executable).parent)
    assert (Path(bindir) / "ansible").is_file()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    runtime._find_ansible_programs()
    assert os.environ["PATH"] == f"/usr/bin:/bin:{bindir}"
    runtime._find_ansible_programs()  # once only
    assert os.environ["PATH"] == f"/usr/bin:/bin:{bindir}"


def test_transport__paramiko_without_the_plugin_says_it_was_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    """ansible-core 2.21 has no paramiko plugin: the error says so and names the alternative."""
    from ansible.plugins.loader import connection_loader

    if compat.paramiko_plugin_available():  # 2.19, 2.20: take the plugin away as 2.21 does
        monkeypatch.setattr(compat, "paramiko_plugin_available", lambda: False)
        monkeypatch.setattr(connection_loader, "get", lambda *args, **kwargs: None)
    conn = transport.AnsibleTransport("mh-host", {"ansible_connection": "paramiko", "ansible_host": "10.213.0.99"})
    with pytest.raises(HostUnreachableError, match=r"mh-host.*'paramiko' was not found.*removed.*2\.21.*ssh"):
        conn.connect()
    assert not conn.connected


def test_transport__staged_stdin_is_created_private_before_the_copy() -> None:
    calls: list[tuple[str, str, int | None]] = []

    class FakeConnection:
        def exec_command(self, cmd: str, sudoable: bool = True) -> tuple[int, bytes, bytes]:
            calls.append(("exec", cmd, None))
            return 0, b"", b""

        def put_file(self, local: str, remote: str) -> None:
            calls.append(("put", remote, os.stat(local).st_mode & 0o777))

    remote = transport.AnsibleTransport._stage_input(object(), FakeConnection(), b"a password")  # type: ignore[arg-type]
    assert remote.startswith("/tmp/.mh-stdin-")
    assert calls == [("exec", f"umask 077; : > {remote}", None), ("put", remote, 0o600)]


def test_transport__plugins_load_one_thread_at_a_time_while_connections_open_side_by_side(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ansible's loader hands a half-run plugin module to a second thread: loading is serialised, opening is not."""
    from ansible.plugins.loader import connection_loader

    lock = threading.Lock()
    now = {"load": 0, "open": 0}
    most = {"load": 0, "open": 0}

    def counted(kind: str, seconds: float) -> None:
        with lock:
            now[kind] += 1
            most[kind] = max(most[kind], now[kind])
        time.sleep(seconds)
        with lock:
            now[kind] -= 1

    real_get = connection_loader.get
    real_open = compat.open_connection

    def slow_get(*args: object, **kwargs: object) -> object:
        counted("load", 0.05)
        return real_get(*args, **kwargs)

    def slow_open(conn: object) -> None:
        counted("open", 0.3)
        real_open(conn)

    monkeypatch.setattr(connection_loader, "get", slow_get)
    monkeypatch.setattr(compat, "open_connection", slow_open)
    hosts = [transport.AnsibleTransport(f"h{n}", {"ansible_connection": "local"}) for n in range(4)]
    threads = [threading.Thread(target=host.connect) for host in hosts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert all(host.connected for host in hosts)
        assert most == {"load": 1, "open": 4}
    finally:
        for host in hosts:
            host.close()
