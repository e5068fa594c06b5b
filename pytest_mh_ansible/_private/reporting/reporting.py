"""Artifacts, per-test logs, reports, interruption and timeouts (the reporting side of the plugin)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
from collections.abc import Generator, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, final

import pytest

from ...errors import HostUnreachableError
from ..options import add_flag, add_seconds, choice_option, dest
from ..session.signals import Interrupts, SignalRelay, TestTimer
from ..stash import FIXTURE_KEY, MARK_KEY, SESSION_KEY
from .artifacts import artifact_patterns, artifacts_root, fetch_artifacts, test_directory, utility_patterns
from .export import WHEN
from .logs import LogTap

if TYPE_CHECKING:
    from ...host import MultihostHost
    from ...marks import TopologyMark
    from ..session.session import MultihostSession

__all__ = ["addoption", "configure", "register_markers"]

log = logging.getLogger("pytest_mh_ansible.artifacts")

MODES = ("never", "on-failure", "always")
PLUGIN_NAME = "mh-ansible-reporting"


class _CollectArtifactsAction(argparse.Action):
    """``--mh-collect-artifacts [WHEN]``: bare means ``always``, and never swallows a test path after it.

    argparse gives an optional value to the flag whatever follows it, so ``--mh-collect-artifacts
    tests/x.py`` would take the path as WHEN. A value that is not a mode but names an existing
    path is handed back to pytest's positional arguments instead.
    """

    modes: tuple[str, ...] = MODES

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: Any = None
    ) -> None:
        if values is None or values in self.modes:
            setattr(namespace, self.dest, values if values is not None else self.const)
            return
        value = str(values)
        if not os.path.exists(value.partition("::")[0]):
            raise argparse.ArgumentError(self, f"invalid choice: {value!r} (choose from {', '.join(self.modes)})")
        setattr(namespace, self.dest, self.const)
        stray: list[str] = getattr(namespace, "_mh_stray_args", [])
        if value not in stray:
            namespace._mh_stray_args = [*stray, value]
        for action in parser._actions:
            if action.dest == "file_or_dir" and not isinstance(action, _PositionalsWithStray):
                action.__class__ = _PositionalsWithStray


class _ExportPlaybooksAction(_CollectArtifactsAction):
    """``--mh-export-playbooks [WHEN]``: bare means ``failed``; a test path after it stays a test path."""

    modes = WHEN


class _PositionalsWithStray(argparse._StoreAction):
    """pytest's ``file_or_dir`` positional, with the paths ``--mh-collect-artifacts`` took by mistake put first."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: Any = None
    ) -> None:
        stray = getattr(namespace, "_mh_stray_args", [])
        setattr(namespace, self.dest, [*stray, *[v for v in values or [] if v not in stray]])


def _add_when_option(group: Any, name: str, *, action: type[_CollectArtifactsAction], bare: str, help: str) -> None:
    """Add the option ``name`` whose value is one of ``action.modes``: ``bare`` when given without one, else None."""
    group.addoption(name, dest=dest(name), action=action, nargs="?", const=bare, metavar="WHEN", help=help)


def addoption(group: Any, parser: pytest.Parser) -> None:
    """Add the reporting options to the plugin's option group (called from ``plugin.pytest_addoption``)."""
    _add_when_option(
        group,
        "--mh-collect-artifacts",
        action=_CollectArtifactsAction,
        bare="always",
        help="Fetch the hosts' artifacts (mh_artifacts) and write per-test logs: never, on-failure "
        "(default) or always (also the bare flag).",
    )
    _add_when_option(
        group,
        "--mh-export-playbooks",
        action=_ExportPlaybooksAction,
        bare="failed",
        help="Write each test's changes as playbooks (setup.yml, changes.yml, revert.yml, inventory.yml) into its "
        "artifacts directory, to replay with ansible-playbook: never (default), failed (also the bare flag) or all.",
    )
    group.addoption(
        "--mh-artifacts-dir",
        dest="mh_artifacts_dir",
        default=None,
        metavar="DIR",
        help="Where artifacts and per-test logs go (default: ./artifacts, relative to the invocation directory).",
    )
    add_flag(
        group, "--mh-compress-artifacts", help="Keep each host's artifacts as one .tar.gz instead of unpacking them."
    )
    group.addoption(
        "--mh-log-path",
        dest="mh_log_path",
        default=None,
        metavar="FILE",
        help="Also write every command, playbook and rollback line of the session (all tests) to FILE.",
    )
    add_flag(
        group,
        "--mh-show-hosts",
        help="Show the inventory's roles, hosts and the collected tests' topologies, then exit without running tests.",
    )
    add_seconds(
        group,
        "--mh-timeout",
        default=None,
        help="Stop a test on hosts that runs longer (its teardown and rollback still run); "
        "@pytest.mark.mh_timeout(seconds) overrides it per test.",
    )
    parser.addini("mh_collect_artifacts", "When to fetch artifacts: never, on-failure or always.", default="on-failure")
    parser.addini("mh_artifacts_dir", "Where artifacts and per-test logs go.", default="artifacts")
    parser.addini("mh_export_playbooks", "Write tests' changes as playbooks: never, failed or all.", default="never")
    parser.addini("mh_timeout", "Default time limit of a test on hosts, in seconds (0: none).", default="")


def register_markers(config: pytest.Config) -> None:
    """Register the reporting markers (needed with --strict-markers even without an inventory)."""
    config.addinivalue_line(
        "markers",
        "mh_timeout(seconds): stop this test after that many seconds; its teardown and rollback still run "
        "(pytest-mh-ansible).",
    )


def configure(config: pytest.Config) -> None:
    """Register the reporting hooks when a session exists (called from ``plugin.pytest_configure``)."""
    session = config.stash.get(SESSION_KEY, None)
    if session is None or config.pluginmanager.has_plugin(PLUGIN_NAME):
        return
    config.pluginmanager.register(ReportingPlugin(config, session), PLUGIN_NAME)


def _mode(config: pytest.Config) -> str:
    return choice_option(config, "mh_collect_artifacts", "on-failure", MODES)


def _default_timeout(config: pytest.Config) -> float | None:
    value = config.getoption("mh_timeout")
    if value is None:
        raw = str(config.getini("mh_timeout") or "").strip()
        try:
            value = float(raw) if raw else None
        except ValueError:
            raise pytest.UsageError(f"ini option mh_timeout: {raw!r} is not a number of seconds") from None
    return value if value and value > 0 else None


@final
class ReportingPlugin:
    """The reporting hooks of one session: artifacts, logs, JUnit properties, header, Ctrl-C and timeouts."""

    def __init__(self, config: pytest.Config, session: MultihostSession) -> None:
        self.config = config
        self.session = session
        self.mode = _mode(config)
        # pytest-mh's --mh-collect-logs: when per-test logs are written (default: as the artifacts)
        self.log_mode = str(config.getoption("mh_collect_logs", None) or self.mode)
        self.compress = bool(config.getoption("mh_compress_artifacts"))
        self.timeout = _default_timeout(config)
        base = config.invocation_params.dir
        self.root = artifacts_root(config)
        log_path = config.getoption("mh_log_path")
        combined = None
        if log_path:
            combined = Path(log_path) if Path(log_path).is_absolute() else base / log_path
            worker = getattr(config, "workerinput", {}).get("workerid")
            if worker:  # one file per xdist worker: lines of parallel tests would interleave
                combined = combined.with_name(f"{combined.stem}-{worker}{combined.suffix}")
        self.tap = LogTap(combined)
        self.dead = session.dead
        relayed = bool(getattr(config, "workerinput", None))  # an xdist worker: its controller passes signals on
        self.interrupts = Interrupts(self._say, pending=session.journal.pending, relayed=relayed)
        self.relay = SignalRelay(self._say)
        self.timer = TestTimer()
        self._failed: dict[str, bool] = {}
        self._skipped: set[str] = set()
        self._collected: set[str] = set()
        self._host_tests: set[str] = set()
        self._topologies: dict[str, TopologyMark] = {}

    # -- session events (pytest_mh_* hooks, announced by the session) ------------------------------
    def pytest_mh_host_setup(self, host: MultihostHost, error: BaseException | None) -> None:
        """Fetch the host's ``session_setup`` artifacts, as asked (not from a host that could not be reached)."""
        if not isinstance(error, HostUnreachableError) and self._wanted(error is not None):
            self._fetch(host, "session_setup", self.root / "session" / host.name)

    def pytest_mh_topology_setup(
        self, mark: TopologyMark, hosts: list[MultihostHost], error: BaseException | None
    ) -> None:
        if not isinstance(error, HostUnreachableError):
            self._collect_scope("topology_setup", mark, hosts, error is not None)

    def pytest_mh_topology_teardown(
        self, mark: TopologyMark, hosts: list[MultihostHost], error: BaseException | None
    ) -> None:
        self._collect_scope("topology_teardown", mark, hosts, error is not None)

    def pytest_mh_session_teardown(self, hosts: list[MultihostHost], errors: list[Exception]) -> None:
        if self._wanted(bool(errors)):
            for host in hosts:
                self._fetch(host, "session_teardown", self.root / "session" / host.name)

    def _collect_scope(self, phase: str, mark: TopologyMark, hosts: list[MultihostHost], failed: bool) -> None:
        if not self._wanted(failed):
            return
        for host in hosts:
            extra = artifact_patterns(mark.controller, phase, host)
            self._fetch(host, phase, self.root / "topologies" / mark.name / host.name, extra)

    def _wanted(self, failed: bool, mode: str | None = None) -> bool:
        mode = mode or self.mode
        return mode == "always" or (mode == "on-failure" and failed)

    def _fetch(self, host: MultihostHost, phase: str, destination: Path, extra: Iterable[str] = ()) -> None:
        """Fetch ``host``'s artifacts of ``phase``; a failure is logged, never raised (it must not hide the test's)."""
        if host.name in self.dead:
            return
        patterns = [*artifact_patterns(host, phase), *utility_patterns(host, phase), *extra]
        if not patterns:
            return
        try:
            fetch_artifacts(host, patterns, destination, compress=self.compress)
        except Exception as err:
            log.warning("%s: could not fetch %s artifacts into %s: %s", host.name, phase, destination, err)

    def _say(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        disabled = capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext()
        with disabled:
            if reporter is not None:
                reporter.write_line(line, yellow=True, bold=True)
        self.tap.mark(line)

    # -- session ---------------------------------------------------------------------------------
    def _xdist_controller(self) -> bool:
        """True in pytest-xdist's controller: the workers run the tests, fetch artifacts and write the logs."""
        return bool(self.config.pluginmanager.has_plugin("dsession"))

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self._xdist_controller():
            self.relay.install()
            return
        self.tap.install()
        self.interrupts.session = session
        self.interrupts.install()
        self.tap.mark(f"session start: inventory {self.session.options.shown_sources}")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        self.tap.mark("session teardown")
        self.interrupts.tearing_down = True
        yield
        if self.interrupts.received:
            self._say(f"pytest-mh-ansible: the run ended on {self.interrupts.received}; the rollback and teardown ran")
        if self.config.getoption("mh_show_hosts") and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK
        self.tap.mark(f"session end: exit status {int(session.exitstatus)}")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.interrupts.uninstall()
        self.relay.uninstall()

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodeready(self, node: Any) -> None:
        """pytest-xdist's controller: remember the worker's pid, to pass SIGINT, SIGTERM and SIGHUP on to it."""
        try:
            self.relay.workers[str(node.gateway.id)] = int(node.gateway._rinfo().pid)
        except Exception as err:  # an execnet without rinfo: the worker only gets what its group gets
            log.warning("pytest-mh-ansible: no pid for xdist worker %s, signals not passed on: %s", node, err)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        self.relay.workers.pop(str(node.gateway.id), None)
        self.tap.uninstall()

    # -- header, --mh-show-hosts -----------------------------------------------------------------
    def _hosts_lines(self) -> list[str]:
        session = self.session
        count = len(session.host_infos)
        lines = [f"mh-ansible inventory: {session.options.shown_sources} ({count} host{'s' * (count != 1)})"]
        for domain, roles in session.roles_map().items():
            mapping = "; ".join(f"{role}: {', '.join(hosts)}" for role, hosts in roles.items())
            lines.append(f"mh-ansible domain {domain!r}: {mapping}")
        return lines

    def _topology_lines(self, items: Sequence[pytest.Item]) -> list[str]:
        marks: dict[str, TopologyMark] = {}
        for item in items:
            mark = item.stash.get(MARK_KEY, None)
            if mark is not None:
                marks.setdefault(mark.name, mark)
        self._topologies = marks
        lines = []
        for name, mark in marks.items():
            resolved = self.session.resolve(mark)
            if isinstance(resolved, str):
                lines.append(f"mh-ansible topology {name!r}: not runnable: {resolved}")
            else:
                slots = "; ".join(f"{d}.{r}: {', '.join(hosts)}" for (d, r), hosts in resolved.slots.items())
                lines.append(f"mh-ansible topology {name!r}: runnable ({slots})")
        return lines

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        return self._hosts_lines()

    def pytest_report_collectionfinish(self, config: pytest.Config, items: Sequence[pytest.Item]) -> list[str]:
        if config.getoption("mh_show_hosts"):
            return []
        return self._topology_lines(items)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        if not self.config.getoption("mh_show_hosts"):
            return None
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        lines = [*self._hosts_lines(), *self._topology_lines(session.items)]
        if reporter is not None:
            reporter.write_sep("=", "pytest-mh-ansible: hosts and topologies")
            for line in lines:
                reporter.write_line(line)
        return True

    # -- per test --------------------------------------------------------------------------------
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.interrupts.test = nodeid
        self._failed[nodeid] = False
        self.tap.begin(nodeid)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self._failed[report.nodeid] = True
        if report.when == "setup" and report.skipped:
            self._skipped.add(report.nodeid)
        self.tap.mark(f"{report.when}: {report.outcome}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        mark = item.stash.get(MARK_KEY, None)
        self.tap.mark(f"setup {item.nodeid}")
        if mark is None:
            return
        self._host_tests.add(item.nodeid)
        resolved = self.session.resolve(mark)
        if isinstance(resolved, str):
            return
        self._add_properties(item, mark.name, resolved.slots)
        for name in resolved.hosts:
            if name in self.dead:
                if self.session.options.unreachable == "skip":
                    _skip_at_test(str(self.dead.error(name)))
                pytest.fail(f"{item.nodeid}: {self.dead.error(name)}", pytrace=False)

    @staticmethod
    def _add_properties(item: pytest.Item, topology: str, slots: dict[tuple[str, str], tuple[str, ...]]) -> None:
        """JUnit XML properties: ``mh_topology``, ``mh_hosts``, ``mh_role:<role>`` (``<domain>.<role>`` if needed)."""
        if any(name == "mh_topology" for name, _ in item.user_properties):
            return
        hosts = list(dict.fromkeys(h for names in slots.values() for h in names))
        item.user_properties.append(("mh_topology", topology))
        item.user_properties.append(("mh_hosts", ",".join(hosts)))
        domains = {domain for domain, _ in slots}
        for (domain, role), names in slots.items():
            key = role if len(domains) == 1 else f"{domain}.{role}"
            item.user_properties.append((f"mh_role:{key}", ",".join(names)))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        self.tap.mark(f"call {item.nodeid}")
        seconds = self._timeout(item)
        if seconds is not None:
            why = self.timer.start(item.nodeid, seconds)
            if why is not None:
                log.warning("%s: mh_timeout of %g s not applied: %s", item.nodeid, seconds, why)
        try:
            yield
        finally:
            self.timer.cancel()

    def _timeout(self, item: pytest.Item) -> float | None:
        marker = item.get_closest_marker("mh_timeout")
        if marker is not None:
            value: Any = marker.args[0] if marker.args else marker.kwargs.get("seconds")
            try:
                seconds = float(value)
            except (TypeError, ValueError):
                raise pytest.UsageError(f"{item.nodeid}: mh_timeout needs a number of seconds, got {value!r}") from None
            return seconds if seconds > 0 else None
        return self.timeout if MARK_KEY in item.stash else None

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        self.tap.mark(f"teardown {item.nodeid}")
        self.interrupts.tearing_down = True
        try:
            yield
        finally:
            self.interrupts.tearing_down = False

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        if call.excinfo is not None:
            self._mark_unreachable(call.excinfo.value)

        if MARK_KEY not in item.stash or self.mode == "never" or item.nodeid in self._collected:
            return
        if report.when == "setup" and report.skipped:
            return
        failed = report.failed or (self._failed.get(item.nodeid, False) and report.when == "teardown")
        # After the call (before any teardown) when asked always; else right after the failing phase.
        if (self.mode == "always" and report.when in ("call", "teardown")) or failed:
            self._collected.add(item.nodeid)
            destination = self.root / test_directory(item.nodeid)
            self._collect_test(item, destination)
            report.sections.append(("mh artifacts", f"artifacts and log of this test: {destination}"))

    def _mark_unreachable(self, err: BaseException, depth: int = 0) -> None:
        """Mark the hosts of the ``HostUnreachableError`` in ``err`` (its causes, its group) dead.

        Module calls and playbooks reach hosts through Ansible, not the guarded transport: without
        this, a host that died during one would be tried again by every later test.
        """
        if depth > 10:
            return
        if isinstance(err, HostUnreachableError):
            self.dead.mark(err.host, err.reason)
        if isinstance(err, BaseExceptionGroup):
            for inner in err.exceptions:
                self._mark_unreachable(inner, depth + 1)
        if err.__cause__ is not None:
            self._mark_unreachable(err.__cause__, depth + 1)

    def _collect_test(self, item: pytest.Item, destination: Path) -> None:
        fixture = item.stash.get(FIXTURE_KEY, None)
        if fixture is not None:
            for role in fixture.roles:
                controller = artifact_patterns(fixture.topology_mark.controller, "test", role.host)
                extra = [*artifact_patterns(role, "test"), *utility_patterns(role, "test"), *controller]
                self._fetch(role.host, "test", destination / role.role / role.host.name, extra)
            return
        resolved = self.session.resolve(item.stash[MARK_KEY])
        if isinstance(resolved, str):
            return
        for (_, role_name), names in resolved.slots.items():
            for name in names:
                if self.session.is_set_up(name):
                    self._fetch(self.session.host(name), "test", destination / role_name / name)

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.interrupts.test = None
        lines = self.tap.end()
        if self._xdist_controller():
            return
        wanted = nodeid not in self._skipped and self._wanted(self._failed.pop(nodeid, False), self.log_mode)
        self._skipped.discard(nodeid)
        if not wanted or nodeid not in self._host_tests:
            return
        path = self.root / test_directory(nodeid) / "test.log"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        except OSError as err:
            log.warning("could not write the log of %s to %s: %s", nodeid, path, err)


def _skip_at_test(reason: str) -> NoReturn:
    """Skip the running test with its own location in the summary (as a skip marker does), not this line."""
    __tracebackhide__ = True
    try:
        exc = pytest.skip.Exception(reason, _use_item_location=True)  # pytest >= 7
    except TypeError:
        exc = pytest.skip.Exception(reason)
    raise exc
