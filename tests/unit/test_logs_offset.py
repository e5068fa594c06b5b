"""The host's clock offset behind ``logs.journal(since_test_start=True)``: never later than the test's start."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from pytest_mh_ansible import MultihostHost
from pytest_mh_ansible.utils import logs as logs_module


@dataclass
class _Result:
    stdout: str


class _SlowAnswers:
    """A host on the same clock whose reads may come late (the request waited) or early (the answer waited)."""

    def __init__(self, clock: list[float], delays: list[tuple[float, float]]) -> None:
        self.clock = clock
        self.delays = delays  # (before the host reads its clock, after it) per call

    def run(self, command: str, **_: Any) -> _Result:
        assert command == "date +%s.%N"
        before, after = self.delays.pop(0)
        self.clock[0] += before
        read = self.clock[0]  # the true offset is 0
        self.clock[0] += after
        return _Result(f"{read:.9f}\n")


def _logs(monkeypatch: pytest.MonkeyPatch, delays: list[tuple[float, float]]) -> logs_module.Logs:
    clock = [1_000_000.0]
    monkeypatch.setattr(logs_module.time, "time", lambda: clock[0])
    host = MultihostHost("server1", roles=("server",), domain="default", variables={})
    logs = logs_module.Logs(host)
    monkeypatch.setattr(host, "_conn", _SlowAnswers(clock, delays), raising=False)
    return logs


def test_offset__a_late_answer_does_not_move_the_start_later(monkeypatch: pytest.MonkeyPatch) -> None:
    # The first request waits 0.4 s before the host reads its clock: a midpoint estimate would put the
    # host 0.2 s ahead, and a line logged in the first 0.2 s of the test would be left out of the journal.
    logs = _logs(monkeypatch, [(0.4, 0.001), (0.002, 0.002), (0.001, 0.003)])
    offset = logs.host_time(100.0) - 100.0
    assert -0.005 <= offset <= 0.0


def test_offset__measured_once(monkeypatch: pytest.MonkeyPatch) -> None:
    logs = _logs(monkeypatch, [(0.001, 0.001)] * 3)
    first = logs.host_time(50.0)
    assert logs.host_time(50.0) == first  # a fourth read would find no delay left and fail
