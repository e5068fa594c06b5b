"""Connecting a topology's hosts in parallel (fake hosts whose connection takes a while)."""

from __future__ import annotations

import threading
import time
from typing import Any

from pytest_mh_ansible import HostUnreachableError
from pytest_mh_ansible._private.session.connect import probe_all


class SlowConn:
    def __init__(self, name: str, fail: bool, active: list[int], lock: threading.Lock) -> None:
        self.name, self.fail, self.active, self.lock = name, fail, active, lock
        self.commands: list[str] = []

    def connect(self) -> None:
        with self.lock:
            self.active[0] += 1
            self.active[1] = max(self.active[1], self.active[0])
        time.sleep(0.3)
        with self.lock:
            self.active[0] -= 1
        if self.fail:
            raise HostUnreachableError(self.name, "connection refused")

    def run(self, command: str, **_: Any) -> None:
        self.commands.append(command)


class FakeHost:
    def __init__(self, name: str, conn: SlowConn, kind: str) -> None:
        self.name, self.conn = name, conn
        self.vars = {"ansible_connection": kind}


def test_connect__hosts_connect_at_the_same_time_and_errors_stay_per_host() -> None:
    active, lock = [0, 0], threading.Lock()
    names = ("client1", "server1", "server2")
    hosts = [FakeHost(n, SlowConn(n, n == "server2", active, lock), "fake-a") for n in names]
    started = time.monotonic()
    results = probe_all(hosts)  # type: ignore[arg-type]
    assert active[1] == 3  # all three at once, from the first call of the process
    assert time.monotonic() - started < 0.55  # 0.3 s, not 2 x 0.3 s
    assert results["client1"] is None
    assert results["server1"] is None
    assert isinstance(results["server2"], HostUnreachableError)
    assert hosts[0].conn.commands == ["true"]
    assert hosts[2].conn.commands == []


def test_connect__one_host_connects_in_the_calling_thread() -> None:
    active, lock = [0, 0], threading.Lock()
    seen: list[str] = []

    class Here(SlowConn):
        def connect(self) -> None:
            seen.append(threading.current_thread().name)

    host = FakeHost("client1", Here("client1", False, active, lock), "fake-b")
    assert probe_all([host]) == {"client1": None}  # type: ignore[list-item]
    assert seen == [threading.current_thread().name]
