"""Per-test hooks of the bundled utilities: mark the test start (logs) and check for crashes after the test."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from ...errors import MultihostError
from ..stash import FIXTURE_KEY

__all__ = ["CrashCheck", "addini", "register"]

MODES = ("fail", "warn", "ignore")
FINDINGS_KEY = pytest.StashKey[list[str]]()


def addini(parser: pytest.Parser) -> None:
    """Add the ini option ``mh_crashes`` (called from ``plugin.pytest_addoption``)."""
    parser.addini(
        "mh_crashes",
        "Core dumps or SELinux/AppArmor denials on a test's hosts during the test: fail, warn or ignore "
        "(default: ignore, as the check costs commands on every host after every test).",
        default="ignore",
    )


def register(config: pytest.Config) -> None:
    """Register the hooks (called from ``plugin.pytest_configure``); a bad ``mh_crashes`` is a usage error."""
    mode = str(config.getini("mh_crashes") or "ignore").strip()
    if mode not in MODES:
        raise pytest.UsageError(f"ini option mh_crashes: {mode!r} is not one of {', '.join(MODES)}")
    if not config.pluginmanager.has_plugin("mh-ansible-crash-check"):
        config.pluginmanager.register(CrashCheck(mode), "mh-ansible-crash-check")


class CrashCheck:
    """Marks the start of every test, and after the test body asks the test's hosts for crashes."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.warned: list[str] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        from ...utils.logs import mark_test_start

        mark_test_start()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        report: pytest.TestReport = yield
        if self.mode == "ignore" or call.when != "call" or report.skipped:
            return report
        findings = self._findings(item)
        if not findings:
            return report
        text = "\n".join(findings)
        report.sections.append(("mh crashes", text))
        if self.mode == "fail" and report.passed:
            report.outcome = "failed"
            report.longrepr = f"{item.nodeid}: crashes on the test's hosts (mh_crashes = fail):\n{text}"
        elif self.mode == "warn":
            self.warned.append(f"{item.nodeid}:\n  " + text.replace("\n", "\n  "))
        return report

    def _findings(self, item: pytest.Item) -> list[str]:
        fixture = item.stash.get(FIXTURE_KEY, None)
        if fixture is None:
            return []
        findings: list[str] = []
        for host in dict.fromkeys(fixture.hosts):
            try:
                findings += [str(crash) for crash in host.crashes.check()]
            except MultihostError as err:
                findings.append(f"{host.name}: crash check failed: {err}")
        return findings

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.warned:
            terminalreporter.write_sep("=", "pytest-mh-ansible: crashes during tests (mh_crashes = warn)", yellow=True)
            for line in self.warned:
                terminalreporter.write_line(line)
