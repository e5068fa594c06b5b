"""Say in the terminal what was undone of dead sessions' changes (``pytest_mh_host_recovered``), xdist too.

A host's recovery runs in the process that first uses the host: in an xdist worker, whose terminal
nobody sees. So the lines also travel with the next test report (a section ``mh recovered``) to the
process that prints the run's summary, as pytest-xdist sends every report to its controller.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ...host import MultihostHost

__all__ = ["SECTION", "RecoveredSummary", "register"]

SECTION = "mh recovered"


def register(config: pytest.Config) -> None:
    """Register the hooks (called from ``plugin.pytest_configure``)."""
    if not config.pluginmanager.has_plugin("mh-ansible-recovered"):
        config.pluginmanager.register(RecoveredSummary(config), "mh-ansible-recovered")


class RecoveredSummary:
    """Prints recoveries as they happen (without xdist) and lists them all at the end of the run."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.pending: list[str] = []
        self.found: list[str] = []

    def pytest_mh_host_recovered(
        self, host: MultihostHost, restored: list[str], left: list[str], skipped: list[str]
    ) -> None:
        lines = [*restored, *left]
        lines += [
            f"[{host.name}] holds the rollback journal of session {owner} (another controller, maybe still "
            "running): left alone; `pytest-mh-ansible recover -i INVENTORY` replays it"
            for owner in skipped
        ]
        self.pending.extend(lines)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or getattr(self.config, "workerinput", None) is not None:
            return
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        disabled = capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext()
        with disabled:
            reporter.ensure_newline()
            for line in lines:
                reporter.write_line(f"pytest-mh-ansible: {line}", yellow=True, bold=True)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        report: pytest.TestReport = yield
        if self.pending:
            report.sections.append((SECTION, "\n".join(self.pending)))
            self.pending = []
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for title, content in report.sections:
            if title == SECTION:
                self.found.extend(content.splitlines())

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        found = self.found + self.pending
        if not found:
            return
        terminalreporter.write_sep("=", "pytest-mh-ansible: changes left by sessions that are gone", yellow=True)
        for line in found:
            terminalreporter.write_line(line)
