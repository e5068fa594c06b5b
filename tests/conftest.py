"""Shared by every test directory: in CI, a test that needs the lab or a root machine must not skip.

With ``MH_TEST_NO_SKIP=1`` (``.ci/run`` sets it), a skipped integration, collection, bench or soak test
is reported as failed with its skip reason, so that a run where the lab could not start, or that
ran without root, can never be green.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
MUST_RUN = (HERE / "integration", HERE / "collection", HERE / "bench", HERE / "soak")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report: pytest.TestReport = yield
    if (
        os.environ.get("MH_TEST_NO_SKIP") == "1"
        and report.skipped
        and not hasattr(report, "wasxfail")
        and any(root in Path(item.path).parents for root in MUST_RUN)
    ):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped, but MH_TEST_NO_SKIP=1 forbids skips here: {reason}"
    return report


@pytest.fixture(autouse=True)
def _fixed_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pytest runs that tests start see an 80-column terminal, whatever ``COLUMNS`` the caller has.

    pytest cuts its short summary to the terminal's width, so without this an assertion on it
    would pass in one CI and fail in another.
    """
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("LINES", raising=False)


def pytest_configure(config: pytest.Config) -> None:
    """With ``MH_TEST_INSTALLED=1``, the tests must exercise the installed wheel, not this checkout."""
    if os.environ.get("MH_TEST_INSTALLED") != "1":
        return
    import pytest_mh_ansible

    location = Path(pytest_mh_ansible.__file__).resolve()
    if HERE.parent / "pytest_mh_ansible" in location.parents:
        raise pytest.UsageError(f"MH_TEST_INSTALLED=1, but pytest_mh_ansible comes from the checkout: {location}")
