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
    # The first host of a connection kind not used yet in the process connects alone (plugin import).
    hosts = [FakeHost(n, SlowConn(n, n == "server2", active, lock), "fake-a") for n in names]
    started = time.monotonic()
    results = probe_all(hosts)  # type: ignore[arg-type]
    assert active[1] == 2
    assert time.monotonic() - started < 0.8  # 2 x 0.3 s, not 3 x 0.3 s
    assert results["client1"] is None
    assert results["server1"] is None
    assert isinstance(results["server2"], HostUnreachableError)
    assert hosts[0].conn.commands == ["true"]
    assert hosts[2].conn.commands == []
    # Once the kind is loaded, all three connect at once.
    active[:] = [0, 0]
    again = [FakeHost(n, SlowConn(n, False, active, lock), "fake-a") for n in names]
    started = time.monotonic()
    assert probe_all(again) == dict.fromkeys(names)  # type: ignore[arg-type]
    assert active[1] == 3
    assert time.monotonic() - started < 0.55


def test_connect__one_host_connects_in_the_calling_thread() -> None:
    active, lock = [0, 0], threading.Lock()
    host = FakeHost("client1", SlowConn("client1", False, active, lock), "fake-b")
    assert probe_all([host]) == {"client1": None}  # type: ignore[list-item]


def test_connect__a_second_caller_waits_for_the_first_connection_of_a_kind() -> None:
    """The leases' and the tests' connections open at once: the plugin still loads in one thread alone."""
    active, lock = [0, 0], threading.Lock()
    first = [FakeHost("a1", SlowConn("a1", False, active, lock), "fake-c")]
    second = [FakeHost(n, SlowConn(n, False, active, lock), "fake-c") for n in ("b1", "b2")]
    other = threading.Thread(target=probe_all, args=(first,))
    other.start()
    time.sleep(0.05)  # a1 is connecting, as the first of its kind
    started = time.monotonic()
    assert probe_all(second) == {"b1": None, "b2": None}  # type: ignore[arg-type]
    other.join()
    assert active[1] == 2  # b1 and b2 together, never beside a1
    assert 0.45 < time.monotonic() - started < 0.85  # waited for a1 (0.25 s left), then 0.3 s side by side
