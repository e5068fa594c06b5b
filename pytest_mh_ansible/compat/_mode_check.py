"""The check behind the layer's utilities with a mode (``Coredumpd``, ``Auditd``): findings after a test's body.

:class:`ModeCheck` is a pytest plugin object, registered by the layer's plugin
(``pytest_mh_ansible.compat.plugin``) when pytest is configured. It follows the test pytest runs
(``pytest_runtest_protocol``), so that a utility set up for that test can ask to be checked after
its body (:meth:`ModeCheckedUtility.setup`); nothing else is reached into.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, ClassVar, Literal, Self, overload

import pytest

from .. import MultihostError
from ..utils.logs import Logs, test_start
from .utility import MultihostUtility

__all__ = ["MODES", "PLUGIN_NAME", "Mode", "ModeAttribute", "ModeCheck", "ModeCheckedUtility", "check_mode"]

Mode = Literal["fail", "warn", "ignore"]
MODES: tuple[Mode, ...] = ("fail", "warn", "ignore")

PLUGIN_NAME = "mh-ansible-compat-mode-check"
"""The name of the hook object (:class:`ModeCheck`) in pytest's plugin manager; one per pytest run."""


def check_mode(name: str, mode: object) -> Mode:
    """``mode`` if it is ``"fail"``, ``"warn"`` or ``"ignore"``; else a ``ValueError`` naming ``name``."""
    if mode not in MODES:
        raise ValueError(f"{name} must be 'fail', 'warn' or 'ignore', got {mode!r}")
    return mode


class ModeAttribute:
    """The mode of a :class:`ModeCheckedUtility` as a plain attribute (``Auditd.avc_mode``, ``Coredumpd.mode``).

    pytest-mh's utilities keep the mode in an attribute that a test may change; here every
    assignment, the constructor's included, is checked (an unknown mode is a ``ValueError`` that
    names the class and the attribute), and the check reads the value through
    :meth:`ModeCheckedUtility._mh_mode`. Reading it is not a use of the utility (no postponed setup
    runs), as reading pytest-mh's attribute is not.

    Example::

        class Auditd(ModeCheckedUtility):
            avc_mode = ModeAttribute("What a denial does to the test: ``fail``, ``warn`` or ``ignore``.")
    """

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self._label = "mode"

    def __set_name__(self, owner: type[ModeCheckedUtility], name: str) -> None:
        self._label = f"{owner.__name__} {name}"

    @overload
    def __get__(self, utility: None, owner: type[ModeCheckedUtility] | None = None) -> Self: ...

    @overload
    def __get__(self, utility: ModeCheckedUtility, owner: type[ModeCheckedUtility] | None = None) -> Mode: ...

    def __get__(self, utility: ModeCheckedUtility | None, owner: type[ModeCheckedUtility] | None = None) -> Self | Mode:
        return self if utility is None else utility._mh_mode()

    def __set__(self, utility: ModeCheckedUtility, mode: Mode) -> None:
        utility._mh_mode_value = check_mode(self._label, mode)


class ModeCheckedUtility(MultihostUtility[Any]):
    """Base of the layer's utilities whose findings after a test leave the test alone, warn or fail it.

    Setting the utility up puts it on the watch list of the running test (:class:`ModeCheck`, which the
    layer's plugin registers). Right after the test's body, the check asks :meth:`_mh_findings` unless the
    mode is ``ignore`` or the test was skipped, and with findings: adds them to the report as the
    section :attr:`_mh_title`; ``fail`` makes a passed test failed (the findings are its failure
    text); ``warn`` keeps the outcome, lists the test at the end of the run and shows it as
    ``PASSED/<word>`` in the ``<category>`` of the summary, as pytest-mh does. This is what the
    ini option ``mh_crashes`` does for ``host.crashes``, per utility and with its own mode.
    """

    _mh_title = "mh findings"  # the report section
    _mh_what = "findings"  # in the failure text: "<what> on host 'x' during the test"
    _mh_category = "FINDINGS"  # pytest-mh's summary category, letter and word of a warned test
    _mh_letter = "X"
    _mh_word = "FINDING"

    def __init__(self, host: Any) -> None:
        super().__init__(host)
        self._mh_result: list[str] | None = None  # what the last check found (after the filter)
        self._mh_logs: Logs | None = None
        self._mh_mode_value: Mode = "ignore"  # set by the subclass's ModeAttribute

    def setup(self) -> None:
        """Forget the last test's findings and watch this test."""
        self._mh_result = None
        check = ModeCheck.active
        if check is None or check.running is None:
            self.logger.debug(f"{type(self).__name__}: not inside a test of a pytest run with the compat plugin")
            return
        check.watch(check.running, self)

    def _mh_mode(self) -> Mode:
        """The mode the check applies: the value of the subclass's :class:`ModeAttribute`."""
        return self._mh_mode_value

    def _mh_findings(self) -> list[str]:
        """What the check reports: empty for nothing (override)."""
        raise NotImplementedError

    def _mh_check(self) -> list[str]:
        """Run :meth:`_mh_findings` and remember the result for :meth:`pytest_report_teststatus`."""
        self._mh_result = self._mh_findings()
        return self._mh_result

    def _mh_since(self) -> float:
        """The time the current test started, on the host's clock (see :class:`~pytest_mh_ansible.utils.Logs`)."""
        if self._mh_logs is None:  # the host's own: its clock offset is measured once per host
            logs = getattr(self.host, "logs", None)
            self._mh_logs = logs if isinstance(logs, Logs) else Logs(self.host)
        return self._mh_logs.host_time(test_start())

    def pytest_report_teststatus(
        self, report: pytest.CollectReport | pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, str] | None:
        """pytest-mh's status of a passed test with findings in ``warn`` mode: ``(category, letter, "PASSED/<word>")``.

        None otherwise: a test failed by ``fail`` mode (or by itself) keeps pytest's own status.
        """
        if getattr(report, "when", None) != "call" or not report.passed or not self._mh_result:
            return None
        if self._mh_mode() != "warn":
            return None
        return self._mh_category, self._mh_letter, f"PASSED/{self._mh_word}"


class ModeCheck:
    """The hook object behind :class:`ModeCheckedUtility`: the test's watched utilities are asked after its body.

    It works like the crash check of ``mh_crashes``: a wrapper of ``pytest_runtest_makereport`` changes
    the call phase's report (a section, and ``failed`` with a failure text in ``fail`` mode), so the
    test's outcome, the exit code, JUnit XML and the artifacts collected on failure all follow.
    """

    active: ClassVar[ModeCheck | None] = None
    """The instance pytest has registered in this process (set while pytest is configured), else None."""

    def __init__(self) -> None:
        self.watched: dict[str, list[ModeCheckedUtility]] = {}
        self.warned: list[str] = []
        self.running: str | None = None  # the node id of the test pytest runs now

    def pytest_configure(self, config: pytest.Config) -> None:
        ModeCheck.active = self

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if ModeCheck.active is self:
            ModeCheck.active = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
        self.running = item.nodeid
        try:
            return (yield)
        finally:
            self.running = None

    def watch(self, nodeid: str, utility: ModeCheckedUtility) -> None:
        """Check ``utility`` after the body of the test ``nodeid``."""
        utilities = self.watched.setdefault(nodeid, [])
        if not any(u is utility for u in utilities):
            utilities.append(utility)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        report: pytest.TestReport = yield
        if call.when != "call" or report.skipped:
            return report
        for utility in self.watched.get(item.nodeid, []):
            self._apply(item, report, utility)
        return report

    def _apply(self, item: pytest.Item, report: pytest.TestReport, utility: ModeCheckedUtility) -> None:
        mode = utility._mh_mode()
        if mode == "ignore":
            return
        name = utility.host.name
        try:
            findings = utility._mh_check()
        except MultihostError as err:
            findings = [f"the check failed: {err}"]
        if not findings:
            return
        text = "\n".join(f"{name}: {line}" for line in findings)
        report.sections.append((utility._mh_title, text))
        kind = type(utility).__name__
        if mode == "fail" and report.passed:
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid}: {utility._mh_what} on host {name!r} during the test ({kind}, mode 'fail'):\n{text}"
            )
        elif mode == "warn":
            self.warned.append(f"{item.nodeid} ({kind}):\n  " + text.replace("\n", "\n  "))

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(
        self, report: pytest.CollectReport | pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, str] | None:
        for utility in self.watched.get(report.nodeid, []):
            status = utility.pytest_report_teststatus(report, config)
            if status is not None:
                return status
        return None

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.watched.pop(nodeid, None)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.warned:
            terminalreporter.write_sep("=", "pytest-mh-ansible: findings of utilities in 'warn' mode", yellow=True)
            for line in self.warned:
                terminalreporter.write_line(line)
