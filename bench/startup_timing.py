"""A pytest plugin for bench/startup.py: when, from the launch, collection ended and the first test body began.

Loaded with ``-p startup_timing`` (bench/ on ``PYTHONPATH``) under either tool. The launch time is the
controller's clock just before it started the process (``STARTUP_TIMING_T0``); the CPU time is the
process's own (user + system, ``getrusage``), which includes the interpreter's start and every import.
The figures are written as JSON to ``STARTUP_TIMING_OUT`` when the first test body starts and again at the end.
"""

from __future__ import annotations

import json
import os
import resource
import time
from typing import Any

import pytest

_T0 = float(os.environ.get("STARTUP_TIMING_T0") or time.time())
_OUT = os.environ.get("STARTUP_TIMING_OUT", "")
_figures: dict[str, float | str] = {}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _write() -> None:
    if _OUT:
        with open(_OUT, "w", encoding="utf-8") as out:
            json.dump(_figures, out)


def pytest_collection_finish(session: Any) -> None:
    _figures["collected_s"] = round(time.time() - _T0, 3)
    _figures["cpu_s_at_collected"] = round(_cpu(), 3)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: Any) -> None:
    if "first_test_body_s" not in _figures:
        _figures["first_test_body_s"] = round(time.time() - _T0, 3)
        _figures["cpu_s_at_first_test"] = round(_cpu(), 3)
        _figures["first_test"] = item.nodeid  # which test came first: each tool orders tests its own way
        _write()


def pytest_unconfigure(config: Any) -> None:
    _figures["cpu_s_total"] = round(_cpu(), 3)
    _write()
