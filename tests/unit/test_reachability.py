"""Unit tests of ``pytest_mh_ansible._private.session.reachability``: what a dead host's later calls say."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_mh_ansible._private.session.reachability import DeadHosts, GuardedTransport
from pytest_mh_ansible.errors import HostUnreachableError


class _Flaky:
    def __init__(self) -> None:
        self.up = True

    def connect(self) -> None:
        pass

    def exec(self, command: str, **kwargs: Any) -> tuple[int, bytes, bytes]:
        if not self.up:
            raise HostUnreachableError("h1", "connection refused")
        return 0, b"", b""


def test_dead_hosts__never_answered_is_not_said_to_have_stopped() -> None:
    dead = DeadHosts()
    inner = _Flaky()
    inner.up = False
    guarded = GuardedTransport("h1", inner, dead)  # type: ignore[arg-type]
    with pytest.raises(HostUnreachableError):
        guarded.exec("true")
    with pytest.raises(HostUnreachableError, match="it did not answer earlier in this session: connection refused"):
        guarded.exec("true")


def test_dead_hosts__answered_then_failed_stopped_answering() -> None:
    dead = DeadHosts()
    inner = _Flaky()
    guarded = GuardedTransport("h1", inner, dead)  # type: ignore[arg-type]
    guarded.connect()
    guarded.exec("true")
    inner.up = False
    with pytest.raises(HostUnreachableError):
        guarded.exec("true")
    with pytest.raises(HostUnreachableError, match="it stopped answering earlier in this session: connection refused"):
        guarded.exec("true")


def test_lease_guard__fails_fast_for_a_dead_host_but_marks_no_host_dead() -> None:
    """Found by the soak: a lease renewal during a test's sshd restart ("Connection refused") marked
    the host dead for the rest of the session, and every later test on it errored."""
    dead = DeadHosts()
    inner = _Flaky()
    lease = GuardedTransport("h1", inner, dead, marks=False)  # type: ignore[arg-type]
    tests = GuardedTransport("h1", inner, dead)  # type: ignore[arg-type]
    inner.up = False
    with pytest.raises(HostUnreachableError, match="connection refused"):
        lease.exec("renew")
    assert "h1" not in dead
    inner.up = True
    assert tests.exec("true") == (0, b"", b"")  # the tests' commands go on
    inner.up = False
    with pytest.raises(HostUnreachableError):
        tests.exec("true")
    assert "h1" in dead
    with pytest.raises(HostUnreachableError, match="earlier in this session"):
        lease.exec("renew")  # a host the tests found dead: the lease guard fails at once
