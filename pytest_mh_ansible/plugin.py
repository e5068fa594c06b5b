"""The pytest plugin: options, markers, topology parametrization, fixtures and the life-cycle hooks.

Everything pytest-facing lives here; the domain modules know nothing of pytest hooks.
The plugin is inert until an inventory is given: without one, topology tests are
parametrized as usual (same node ids) and skipped with the reason.
"""

from __future__ import annotations

import argparse
import inspect
import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from . import hookspecs
from ._private.ansible.executor_choice import EXECUTORS
from ._private.parallel import hooks as parallel
from ._private.parallel.groups import group_name
from ._private.reporting import crash_check, drift_check, reporting
from ._private.secrets import secrets
from ._private.session.session import MultihostSession, SessionOptions
from ._private.stash import (
    ASSIGNMENT_KEY,
    FIXTURE_KEY,
    FIXTURES_KEY,
    LAB_KEY,
    MARK_KEY,
    NO_INVENTORY_KEY,
    POOL_KEY,
    SESSION_KEY,
)
from .errors import InventoryError, LabError, MultihostError, TeardownExceptionGroup, TopologyMarkError
from .host import MultihostHost
from .marks import TopologyMark, expand_topology_marks
from .multihost import MultihostFixture
from .rollback import RollbackJournal
from .topology import Topology

PARAM = "mh_topology_mark"
POOL_PARAM = "mh_pool"

NO_INVENTORY = (
    "no Ansible inventory given: use -i/--mh-inventory PATH, the ini option mh_inventory or ANSIBLE_INVENTORY"
)


# -- options --------------------------------------------------------------------------------------
def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mh-ansible", "pytest-mh-ansible: multi-host tests on Ansible inventories")
    inventory_help = (
        "Ansible inventory source, as ansible's -i: a file (INI, YAML, JSON), a directory, a script, "
        "an inventory plugin config or a host list 'h1,h2,'. Repeatable."
    )
    try:
        # pytest reserves lowercase short options for itself; its private _addoption lets
        # plugins take one (as pytest-xdist does for -n). Nothing else uses -i.
        group._addoption(
            "-i",
            "--mh-inventory",
            dest="mh_inventory",
            action="append",
            default=[],
            metavar="INVENTORY",
            help=inventory_help,
        )
    except (ValueError, argparse.ArgumentError):
        group.addoption(
            "--mh-inventory", dest="mh_inventory", action="append", default=[], metavar="INVENTORY", help=inventory_help
        )
    group.addoption(
        "--mh-vault-password-file",
        dest="mh_vault_password_file",
        action="append",
        default=[],
        metavar="FILE",
        help="Vault password file (or script) for vault-encrypted inventory variables.",
    )
    group.addoption(
        "--mh-vault-id",
        dest="mh_vault_id",
        action="append",
        default=[],
        metavar="LABEL@FILE",
        help="Vault identity, as ansible's --vault-id. Repeatable.",
    )
    group.addoption(
        "--mh-limit",
        dest="mh_limit",
        metavar="PATTERN",
        help="Use only the inventory hosts that match this Ansible host pattern.",
    )
    group.addoption(
        "--mh-topology",
        dest="mh_topology",
        action="append",
        default=[],
        metavar="NAME",
        help="Run only tests of this topology (repeatable); deselects tests without a topology.",
    )
    group.addoption(
        "--mh-not-topology",
        dest="mh_not_topology",
        action="append",
        default=[],
        metavar="NAME",
        help="Do not run tests of this topology (repeatable).",
    )
    group.addoption(
        "--mh-exact-topology",
        dest="mh_exact_topology",
        action="store_true",
        default=False,
        help="Run only topologies that use every host of the inventory.",
    )
    group.addoption(
        "--mh-unreachable",
        dest="mh_unreachable",
        choices=("error", "skip"),
        default=None,
        help="What tests that need an unreachable host do: error (default) or skip.",
    )
    group.addoption(
        "--mh-executor",
        dest="mh_executor",
        choices=EXECUTORS,
        default=None,
        help="How modules run on the hosts: warm (a long-lived agent per host forks each module from a "
        "pre-imported interpreter; default) or standard (a new Python per module, as ansible-playbook). "
        "A host's mh_executor variable overrides it.",
    )
    group.addoption(
        "--mh-verify-rollback",
        dest="mh_verify_rollback",
        action="store_true",
        default=False,
        help="Fingerprint each test's hosts before it and after its rollback; any difference fails the test's "
        "teardown (paths of mh_verify_paths, users, groups, services, packages).",
    )
    group.addoption(
        "--mh-lab",
        dest="mh_lab",
        metavar="SPEC",
        help="Bring up a local lab from this spec file for the session (root only), use its "
        "inventory, and tear it down at the end.",
    )
    parallel.addoption(group)
    reporting.addoption(group, parser)
    crash_check.addini(parser)
    parser.addini("mh_inventory", "Ansible inventory sources (used when -i is not given).", type="args", default=[])
    parser.addini("mh_vault_password_file", "Vault password file for the inventory.", default="")
    parser.addini("mh_default_domain", "Topology domain of hosts without mh_domain.", default="default")
    parser.addini(
        "mh_role_groups",
        "Lines 'role = group': hosts in inventory group 'group' have role 'role'.",
        type="linelist",
        default=[],
    )
    parser.addini("mh_playbook_dir", "Where relative playbook paths are looked up after the rootdir.", default="")
    parser.addini(
        "mh_verify_paths",
        "Paths the drift check fingerprints (default /etc /home /root /var/lib; host var mh_verify_paths wins).",
        type="linelist",
        default=[],
    )
    parser.addini(
        "mh_verify_exclude", "Globs the drift check leaves out (besides its defaults).", type="linelist", default=[]
    )
    parser.addini("mh_unreachable", "What tests that need an unreachable host do: error or skip.", default="error")
    parser.addini("mh_executor", "How modules run on the hosts: warm (default) or standard.", default="warm")


# -- configuration --------------------------------------------------------------------------------
def _inventory_sources(config: pytest.Config) -> list[str]:
    sources: list[str] = list(config.getoption("mh_inventory") or [])
    if not sources:
        sources = [str(s) for s in config.getini("mh_inventory")]
    if not sources and os.environ.get("ANSIBLE_INVENTORY"):
        sources = [s for s in os.environ["ANSIBLE_INVENTORY"].split(",") if s]
    return sources


def _role_groups(config: pytest.Config) -> dict[str, str]:
    result: dict[str, str] = {}
    for line in config.getini("mh_role_groups"):
        role, sep, group = str(line).partition("=")
        if not sep or not role.strip() or not group.strip():
            raise pytest.UsageError(f"ini option mh_role_groups: {line!r} is not of the form 'role = group'")
        result[group.strip()] = role.strip()
    return result


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "topology(mark | known_topology | group | [marks] | name, topology, *, controller, fixtures | role=count): "
        "run the test once per topology, on hosts of the Ansible inventory (pytest-mh-ansible).",
    )
    config.addinivalue_line(
        "markers",
        "require(condition, reason): skip the test unless condition(**fixtures) is true (pytest-mh-ansible).",
    )
    reporting.register_markers(config)
    config.stash[FIXTURES_KEY] = set()
    sources = _inventory_sources(config)
    lab_spec = config.getoption("mh_lab")
    if lab_spec:
        sources.append(_lab_up(config, lab_spec))
    if not sources:
        config.stash[NO_INVENTORY_KEY] = NO_INVENTORY
        return
    from ._private.ansible.inventory import Inventory

    vault_files = list(config.getoption("mh_vault_password_file") or [])
    if not vault_files and config.getini("mh_vault_password_file"):
        vault_files = [str(config.getini("mh_vault_password_file"))]
    try:
        inventory = Inventory.load(
            sources,
            vault_password_files=vault_files,
            vault_ids=list(config.getoption("mh_vault_id") or []),
            limit=config.getoption("mh_limit"),
            basedir=str(config.rootpath),
        )
    except InventoryError as err:
        raise pytest.UsageError(f"pytest-mh-ansible: {err}") from None
    unreachable = config.getoption("mh_unreachable") or str(config.getini("mh_unreachable") or "error")
    if unreachable not in ("error", "skip"):
        raise pytest.UsageError(f"ini option mh_unreachable: {unreachable!r} is not 'error' or 'skip'")
    executor = config.getoption("mh_executor") or str(config.getini("mh_executor") or "warm")
    if executor not in EXECUTORS:
        raise pytest.UsageError(f"ini option mh_executor: {executor!r} is not 'warm' or 'standard'")
    options = SessionOptions(
        sources=tuple(sources),
        executor=executor,
        default_domain=str(config.getini("mh_default_domain") or "default"),
        role_groups=_role_groups(config),
        unreachable=unreachable,
        vault_password_files=tuple(vault_files),
        playbook_dirs=tuple(_playbook_dirs(config)),
        **parallel.lease_options(config),
    )
    try:
        session = MultihostSession(
            options,
            inventory,
            lambda registry: config.hook.pytest_mh_register(registry=registry),
            events=_HookEvents(config.hook),
        )
    except MultihostError as err:  # a bad mh_* host variable
        raise pytest.UsageError(f"pytest-mh-ansible: {err}") from None
    config.stash[SESSION_KEY] = session
    reporting.configure(config)
    crash_check.register(config)
    drift_check.register(config)
    parallel.register(config, session)


class _HookEvents:
    """Relays the session's events to the ``pytest_mh_*`` hooks (see hookspecs.py), for every plugin to hear."""

    def __init__(self, hook: Any) -> None:
        self._hook = hook

    def host_setup(self, host: MultihostHost, error: BaseException | None) -> None:
        self._hook.pytest_mh_host_setup(host=host, error=error)

    def topology_setup(self, mark: TopologyMark, hosts: list[MultihostHost], error: BaseException | None) -> None:
        self._hook.pytest_mh_topology_setup(mark=mark, hosts=hosts, error=error)

    def topology_teardown(self, mark: TopologyMark, hosts: list[MultihostHost], error: BaseException | None) -> None:
        self._hook.pytest_mh_topology_teardown(mark=mark, hosts=hosts, error=error)

    def session_teardown(self, hosts: list[MultihostHost], errors: list[Exception]) -> None:
        self._hook.pytest_mh_session_teardown(hosts=hosts, errors=errors)


def _playbook_dirs(config: pytest.Config) -> list[str]:
    dirs = [str(config.rootpath)]
    extra = str(config.getini("mh_playbook_dir") or "")
    if extra:
        path = Path(extra)
        dirs.append(str(path if path.is_absolute() else config.rootpath / path))
    return dirs


def _lab_up(config: pytest.Config, spec: str) -> str:
    from .lab import Lab, LabSpec

    path = Path(spec)
    if not path.is_absolute():
        path = config.invocation_params.dir / path
    try:
        lab = Lab(LabSpec.from_file(str(path)))
        lab.up()
    except (LabError, OSError) as err:
        raise pytest.UsageError(f"pytest-mh-ansible: --mh-lab {spec}: {err}") from None
    if not hasattr(config, "workerinput"):  # xdist workers reuse the controller's lab and leave it up
        config.stash[LAB_KEY] = lab
    return str(lab.inventory_path)


def pytest_unconfigure(config: pytest.Config) -> None:
    lab = config.stash.get(LAB_KEY, None)
    if lab is not None:
        del config.stash[LAB_KEY]
        lab.down()


def _session(config: pytest.Config) -> MultihostSession | None:
    return config.stash.get(SESSION_KEY, None)


# -- parametrization ------------------------------------------------------------------------------
def _mark_class(config: pytest.Config) -> type[TopologyMark]:
    session = _session(config)
    return session.registry.mark_class if session is not None else TopologyMark


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    markers = list(metafunc.definition.iter_markers("topology"))
    if not markers:
        return
    config = metafunc.config
    try:
        marks = expand_topology_marks(
            metafunc.definition.nodeid,
            [(m.args, m.kwargs) for m in markers],
            default_domain=str(config.getini("mh_default_domain") or "default"),
            mark_class=_mark_class(config),
        )
    except TopologyMarkError as err:
        pytest.fail(str(err), pytrace=False)
    for name in (PARAM, "mh"):
        if name not in metafunc.fixturenames:
            metafunc.fixturenames.append(name)
    _register_role_fixtures(config, {name for mark in marks for name in mark.fixtures})
    if config.pluginmanager.hasplugin("xdist"):
        # The group mark must exist when the item is made: xdist's worker turns xdist_group marks
        # into node-id suffixes (``--dist loadgroup``) in its own collection hook, before ours run.
        params = [
            pytest.param(mark, marks=pytest.mark.xdist_group(group_name(mark.name)), id=mark.name) for mark in marks
        ]
        metafunc.parametrize(PARAM, params)
    else:
        metafunc.parametrize(PARAM, marks, ids=[mark.name for mark in marks])
    session = _session(config)
    if session is not None and session.fleet:  # once per pool: test_x[pair-debian12]
        if POOL_PARAM not in metafunc.fixturenames:
            metafunc.fixturenames.append(POOL_PARAM)
        metafunc.parametrize(POOL_PARAM, session.fleet, ids=session.fleet)


def _register_role_fixtures(config: pytest.Config, names: set[str]) -> None:
    """Define a real pytest fixture for each role fixture name, so that other fixtures can request it."""
    known = config.stash[FIXTURES_KEY]
    new = sorted(names - known)
    if not new:
        return
    known.update(new)
    # pytest looks fixtures up on the holder's class, so they are class attributes.
    attrs = {f"_mh_role_fixture_{name}": pytest.fixture(name=name)(_make_role_fixture(name)) for name in new}
    holder = type("MultihostRoleFixtures", (), attrs)()
    config.pluginmanager.register(holder, f"mh-ansible-role-fixtures-{len(known)}")


def _make_role_fixture(name: str) -> Callable[[Any, pytest.FixtureRequest], Any]:
    def role_fixture(_holder: Any, request: pytest.FixtureRequest) -> Any:
        mh = request.getfixturevalue("mh")
        return mh.fixture(name)

    role_fixture.__doc__ = f"The role object(s) that the test's topology mark maps {name!r} to (pytest-mh-ansible)."
    return role_fixture


# -- selection, skips and grouping ----------------------------------------------------------------
def _item_mark(item: pytest.Item) -> TopologyMark | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    mark = callspec.params.get(PARAM)
    return mark if isinstance(mark, TopologyMark) else None


def _item_pool(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    pool = callspec.params.get(POOL_PARAM) if callspec is not None else None
    return pool if isinstance(pool, str) else None


def _group_key(item: pytest.Item) -> str:
    """Tests are grouped by topology and pool: ``pair`` or ``pair@debian12``."""
    name = item.stash[MARK_KEY].name
    pool = item.stash.get(POOL_KEY, None)
    return name if pool is None else f"{name}@{pool}"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    mh_session = _session(config)
    only = set(config.getoption("mh_topology") or [])
    never = set(config.getoption("mh_not_topology") or [])
    exact = bool(config.getoption("mh_exact_topology"))
    kept: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        mark = _item_mark(item)
        pool = _item_pool(item)
        if mark is not None:
            item.stash[MARK_KEY] = mark
        if pool is not None:
            item.stash[POOL_KEY] = pool
        if (only and (mark is None or mark.name not in only)) or (mark is not None and mark.name in never):
            deselected.append(item)
            continue
        if mark is not None:
            if mh_session is None:
                item.add_marker(pytest.mark.skip(reason=config.stash.get(NO_INVENTORY_KEY, NO_INVENTORY)))
            else:
                resolved = mh_session.resolve(mark, pool)
                if isinstance(resolved, str):
                    item.add_marker(pytest.mark.skip(reason=resolved))
                elif exact and not mh_session.uses_whole_inventory(resolved):
                    deselected.append(item)
                    continue
        kept.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
    # Group by topology (first appearance order) so that each topology is set up once.
    plain = [item for item in kept if MARK_KEY not in item.stash]
    groups: dict[str, list[pytest.Item]] = {}
    for item in kept:
        if MARK_KEY in item.stash:
            groups.setdefault(_group_key(item), []).append(item)
    items[:] = plain + [item for group in groups.values() for item in group]


# -- fixtures -------------------------------------------------------------------------------------
@pytest.fixture
def mh(request: pytest.FixtureRequest) -> Iterator[MultihostFixture]:
    """The multi-host object of a topology test: topology, roles, hosts and ``mh.ns.<domain>.<role>``.

    Requesting it (or any role fixture) sets up the test's hosts, controller and roles, and
    tears them down after the test.
    """
    item = request.node
    mark = item.stash.get(MARK_KEY, None)
    if mark is None:
        raise MultihostError(f"{item.nodeid}: the mh fixture needs a test marked with @pytest.mark.topology")
    mh_session = _session(request.config)
    if mh_session is None:
        pytest.skip(request.config.stash.get(NO_INVENTORY_KEY, NO_INVENTORY))
    assignment = item.stash.get(ASSIGNMENT_KEY, None)
    pool = item.stash.get(POOL_KEY, None)
    if assignment is None and pool is not None:
        resolved = mh_session.resolve(mark, pool)
        assignment = resolved if not isinstance(resolved, str) else None
    active = mh_session.enter(mark, assignment)
    if active.skip_reason:
        pytest.skip(active.skip_reason)
    mh_session.check(active)
    fixture = mh_session.new_fixture(active)
    item.stash[FIXTURE_KEY] = fixture
    _check_require(item, fixture)
    journal = mh_session.journal
    start = len(journal.history)
    hosts = list(dict.fromkeys(fixture.hosts))
    request.config.hook.pytest_mh_test_setup(item=item, hosts=hosts)
    journal.open("test")
    try:
        fixture._setup()
    except BaseException:
        # What setup changed is undone before the error is reported; the setup error is the one shown.
        _finish_test(item, fixture, journal, start, setup_failed=True)
        raise
    yield fixture
    _finish_test(item, fixture, journal, start)
    request.config.hook.pytest_mh_test_teardown(item=item, hosts=hosts)


def _finish_test(
    item: pytest.Item, fixture: MultihostFixture, journal: RollbackJournal, start: int, *, setup_failed: bool = False
) -> None:
    """Tear the test's roles, utilities, controller and hosts down, then roll back its changes."""
    errors: list[Exception] = []
    if not setup_failed:
        try:
            fixture._finish()
        except TeardownExceptionGroup as group:
            errors.extend(group.exceptions)
    try:
        journal.close("test")
    except TeardownExceptionGroup as group:
        errors.extend(group.exceptions)
    lines = journal.history[start:]
    if lines:
        item.add_report_section("teardown", "mh rollback", "\n".join(lines))
    if errors and not setup_failed:
        raise TeardownExceptionGroup(f"teardown of {item.nodeid}: {len(errors)} step(s) failed", errors)


@pytest.fixture
def mh_pool(request: pytest.FixtureRequest) -> str | None:
    """The pool (hosts' ``mh_pool`` inventory variable) the test runs on; None when the inventory has no pools."""
    pool: str | None = request.node.stash.get(POOL_KEY, None)
    return pool


@pytest.fixture
def mh_topology_mark(request: pytest.FixtureRequest) -> TopologyMark | None:
    """The topology mark of the test (parametrized); None for tests without a topology."""
    mark: TopologyMark | None = request.node.stash.get(MARK_KEY, None)
    return mark


@pytest.fixture
def mh_topology(mh_topology_mark: TopologyMark | None) -> Topology | None:
    """The topology the test runs on (None for tests without a topology)."""
    return mh_topology_mark.topology if mh_topology_mark is not None else None


@pytest.fixture
def mh_topology_name(mh_topology_mark: TopologyMark | None) -> str | None:
    """The name of the topology the test runs on (None for tests without a topology)."""
    return mh_topology_mark.name if mh_topology_mark is not None else None


def _check_require(item: pytest.Item, fixture: MultihostFixture) -> None:
    """``@pytest.mark.require(condition, reason)``: call condition with the fixtures it names."""
    available: dict[str, Any] = {"mh": fixture, **fixture.fixtures}
    for marker in item.iter_markers("require"):
        args = list(marker.args)
        condition = args[0] if args else marker.kwargs.get("condition")
        reason = args[1] if len(args) > 1 else marker.kwargs.get("reason", "")
        if not callable(condition):
            raise MultihostError(f"{item.nodeid}: @pytest.mark.require needs a callable condition, got {condition!r}")
        params = inspect.signature(condition).parameters
        missing = [name for name in params if name not in available]
        if missing:
            raise MultihostError(
                f"{item.nodeid}: @pytest.mark.require condition asks for {', '.join(missing)}, "
                f"which topology {fixture.topology_name!r} does not give"
            )
        outcome = condition(**{name: available[name] for name in params})
        if isinstance(outcome, tuple):
            ok, why = bool(outcome[0]), str(outcome[1]) if len(outcome) > 1 and outcome[1] else str(reason)
        else:
            ok, why = bool(outcome), str(reason)
        if not ok:
            pytest.skip(why or f"requirement of {item.nodeid} not met")


# -- life cycle -----------------------------------------------------------------------------------
@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    try:
        yield
    finally:
        mh_session = _session(item.config)
        if mh_session is not None and mh_session.active is not None:
            next_mark = nextitem.stash.get(MARK_KEY, None) if nextitem is not None else None
            if next_mark is None or next_mark.name != mh_session.active.mark.name:
                mh_session.leave()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if _session(item.config) is not None:
        _mask_report(report)
    return report


def _mask_report(report: pytest.TestReport) -> None:
    """Replace every known secret (vault values, passwords) in a test report: failure text and captured output."""
    if report.longrepr is not None:
        text = str(report.longrepr)
        masked = secrets.mask(text)
        if masked != text:
            report.longrepr = masked
    report.sections = [(title, secrets.mask(content)) for title, content in report.sections]


@pytest.hookimpl(trylast=True)  # after pytest's own teardown of the remaining fixtures (Ctrl-C)
def pytest_sessionfinish(session: pytest.Session) -> None:
    mh_session = _session(session.config)
    if mh_session is None:
        return
    errors = mh_session.shutdown()
    if errors:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("=", "pytest-mh-ansible: session teardown errors", red=True)
            for err in errors:
                reporter.write_line(str(err))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
