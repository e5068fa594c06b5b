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
