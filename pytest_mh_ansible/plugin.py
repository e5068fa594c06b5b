"""The pytest plugin: options, markers, topology parametrization, fixtures and the life-cycle hooks.

Everything pytest-facing lives here; the domain modules know nothing of pytest hooks.
The plugin is inert until an inventory is given: without one, topology tests are
parametrized as usual (same node ids) and skipped with the reason.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from . import hookspecs
from ._private import alias, pytest_mh_cli
from ._private.ansible.executor_choice import EXECUTORS
from ._private.options import add_flag, add_lines_ini, add_repeatable, option_or_ini
from ._private.parallel import hooks as parallel
from ._private.parallel.groups import group_name
from ._private.pytest_internals import add_inventory_option, restore_setup
from ._private.reporting import crash_check, drift_check, export, recovered, reporting
from ._private.secrets import secrets
from ._private.session.session import MultihostSession, SessionOptions
from ._private.skips import check_skips
from ._private.stash import (
    ASSIGNMENT_KEY,
    FIXTURE_KEY,
    FIXTURES_KEY,
    LAB_KEY,
    MARK_KEY,
    NO_INVENTORY_KEY,
    POOL_KEY,
    REGISTRY_KEY,
    SESSION_KEY,
    TOPOLOGY_NAMES_KEY,
)
from .errors import InventoryError, LabError, MultihostError, TeardownExceptionGroup, TopologyMarkError
from .host import MultihostHost
from .marks import TopologyMark
from .multihost import MultihostFixture
from .rollback import RollbackJournal
from .topology import Topology

PARAM = "mh_topology_mark"
POOL_PARAM = "mh_pool"

NO_INVENTORY = (
    "no Ansible inventory given: use -i/--mh-inventory PATH, --mh-config MHC (pytest-mh's host file), "
    "the ini option mh_inventory or ANSIBLE_INVENTORY"
)


# -- options --------------------------------------------------------------------------------------
def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    # The options pytest-mh declares too wait until it is known whether the real pytest-mh is registered.
    held = pytest_mh_cli.options_group(
        parser,
        parser.getgroup("mh-ansible", "pytest-mh-ansible: multi-host tests on Ansible inventories"),
        pluginmanager,
    )
    group = cast(pytest.OptionGroup, held)
    inventory_help = (
        "Ansible inventory source, as ansible's -i: a file (INI, YAML, JSON), a directory, a script, "
        "an inventory plugin config or a host list 'h1,h2,'. Repeatable."
    )
    add_inventory_option(
        group, dest="mh_inventory", action="append", default=[], metavar="INVENTORY", help=inventory_help
    )
    add_repeatable(
        group,
        "--mh-vault-password-file",
        metavar="FILE",
        help="Vault password file (or script) for vault-encrypted inventory variables.",
    )
    add_repeatable(
        group, "--mh-vault-id", metavar="LABEL@FILE", help="Vault identity, as ansible's --vault-id. Repeatable."
    )
    group.addoption(
        "--mh-limit",
        dest="mh_limit",
        metavar="PATTERN",
        help="Use only the inventory hosts that match this Ansible host pattern.",
    )
    group.addoption(
        "--mh-inventory-cache",
        dest="mh_inventory_cache",
        choices=("on", "off"),
        default=None,
        help="Keep the parse of a static inventory across runs, keyed by its files, ansible.cfg and ANSIBLE_* "
        "(on, default; off: parse it every run; also MH_ANSIBLE_INVENTORY_CACHE=off).",
    )
    add_repeatable(
        group,
        "--mh-topology",
        metavar="NAME",
        help="Run only tests of this topology (repeatable); deselects tests without a topology.",
    )
    add_repeatable(group, "--mh-not-topology", metavar="NAME", help="Do not run tests of this topology (repeatable).")
    add_flag(group, "--mh-exact-topology", help="Run only topologies that use every host of the inventory.")
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
    add_flag(
        group,
        "--mh-verify-rollback",
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
    pytest_mh_cli.add_options(group)
    crash_check.addini(parser)
    parser.addini("mh_inventory", "Ansible inventory sources (used when -i is not given).", type="args", default=[])
    parser.addini("mh_vault_password_file", "Vault password file for the inventory.", default="")
    parser.addini("mh_default_domain", "Topology domain of hosts without mh_domain.", default="default")
    add_lines_ini(parser, "mh_role_groups", "Lines 'role = group': hosts in inventory group 'group' have role 'role'.")
    parser.addini("mh_playbook_dir", "Where relative playbook paths are looked up after the rootdir.", default="")
    add_lines_ini(
        parser,
        "mh_verify_paths",
        "Paths the drift check fingerprints (default /etc /home /root /var/lib; host var mh_verify_paths wins).",
    )
    add_lines_ini(parser, "mh_verify_exclude", "Globs the drift check leaves out (besides its defaults).")
    add_lines_ini(
        parser,
        "mh_secret_vars",
        "Extra glob patterns of variable and argument names whose values are secrets (besides *password*, "
        "*passwd*, *passphrase*, *secret*, *token*, *key*, *credential*, *_pass).",
    )
    parser.addini("mh_unreachable", "What tests that need an unreachable host do: error or skip.", default="error")
    parser.addini("mh_executor", "How modules run on the hosts: warm (default) or standard.", default="warm")
    parser.addini(
        "mh_unreverted",
        "What a change without an inverse (command/shell, unknown modules, package upgrades) does: warn (listed "
        "in the terminal summary; default) or fail (its test errors at teardown, naming the change).",
        default="warn",
    )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, args: list[str], parser: pytest.Parser
) -> Generator[None, None, None]:
    """Before conftests and other plugins look at it: the rootdir and ini file pytest picks without ``-i PATH``.

    Also before conftests: ``import pytest_mh`` finds the compatibility layer where no real pytest-mh
    is installed. After them: pytest-mh's options are this plugin's unless a conftest registered the
    real pytest-mh.
    """
    restore_setup(early_config, args, parser)
    alias.install(first=False)
    result = yield
    pytest_mh_cli.release(parser, early_config.pluginmanager)
    return result


# -- configuration --------------------------------------------------------------------------------
def _inventory_sources(config: pytest.Config) -> list[tuple[str, str]]:
    """The inventory sources as ``(absolute path or host list, as the user wrote it)``.

    A relative path on the command line or in ``ANSIBLE_INVENTORY`` is relative to the directory
    pytest was started in (as for every CLI); one in the ini file is relative to the ini file.
    """
    started_in = config.invocation_params.dir
    given = [(str(s), started_in) for s in config.getoption("mh_inventory") or []]
    if not given:
        ini_dir = config.inipath.parent if config.inipath is not None else config.rootpath
        given = [(str(s), ini_dir) for s in config.getini("mh_inventory")]
    if not given and os.environ.get("ANSIBLE_INVENTORY"):
        given = [(s, started_in) for s in os.environ["ANSIBLE_INVENTORY"].split(",") if s]
    return [(_anchored(source, base), source) for source, base in given]


def _anchored(source: str, base: Path) -> str:
    if "," in source:  # a host list, "h1,h2,"
        return source
    path = Path(os.path.expanduser(source))
    return path.as_posix() if path.is_absolute() else os.path.normpath(base / path)


def _role_groups(config: pytest.Config) -> dict[str, str]:
    result: dict[str, str] = {}
    for line in config.getini("mh_role_groups"):
        role, sep, group = str(line).partition("=")
        if not sep or not role.strip() or not group.strip():
            raise pytest.UsageError(f"ini option mh_role_groups: {line!r} is not of the form 'role = group'")
        result[group.strip()] = role.strip()
    return result


def _inventory_cache(config: pytest.Config) -> bool:
    """``--mh-inventory-cache``, else ``MH_ANSIBLE_INVENTORY_CACHE``; on unless either says off."""
    from ._private.ansible.inventory_cache import enabled

    return enabled(config.getoption("mh_inventory_cache", None))


def pytest_configure(config: pytest.Config) -> None:
    if pytest_mh_cli.real_plugin(config.pluginmanager) is not None:
        # The suite runs on the real pytest-mh (registered by its conftest or -p pytest_mh): stand aside.
        config.pluginmanager.unregister(sys.modules[__name__])
        return
    config.addinivalue_line(
        "markers",
        "topology(mark | known_topology | group | [marks] | name, topology, *, controller, fixtures | role=count): "
        "run the test once per topology, on hosts of the Ansible inventory (pytest-mh-ansible).",
    )
    config.addinivalue_line(
        "markers",
        "require(condition, reason): skip the test unless condition(**fixtures) is true (pytest-mh-ansible).",
    )
    config.addinivalue_line(
        "markers",
        "mh_unreverted(mode): 'fail' or 'warn' for this test, overriding the ini option mh_unreverted: what a "
        "change without an inverse does (pytest-mh-ansible).",
    )
    config.addinivalue_line(
        "markers",
        "preferred_topology(topology): of the test's topologies run only this one (a known topology, a topology "
        "mark or a name), unless --mh-topology or --mh-ignore-preferred-topology is given (pytest-mh).",
    )
    reporting.register_markers(config)
    config.stash[FIXTURES_KEY] = set()
    secrets.set_name_patterns([str(p) for p in config.getini("mh_secret_vars")])
    given = _inventory_sources(config)
    lab_spec = config.getoption("mh_lab")
    if lab_spec:
        lab_inventory = _lab_up(config, lab_spec)
        given.append((lab_inventory, lab_inventory))
    from_mhc = pytest_mh_cli.mhc_inventory(config)
    if from_mhc is not None:
        given.append(from_mhc)
    sources = [source for source, _ in given]
    if not sources:
        config.stash[NO_INVENTORY_KEY] = NO_INVENTORY
        return
    from ._private.ansible.inventory import Inventory

    vault_files = list(config.getoption("mh_vault_password_file") or [])
    if not vault_files and config.getini("mh_vault_password_file"):
        vault_files = [str(config.getini("mh_vault_password_file"))]
    vault_ids = list(config.getoption("mh_vault_id") or [])
    try:
        inventory = Inventory.load(
            sources,
            vault_password_files=vault_files,
            vault_ids=vault_ids,
            limit=config.getoption("mh_limit"),
            basedir=str(config.rootpath),
            cache=_inventory_cache(config),
        )
    except InventoryError as err:
        raise pytest.UsageError(f"pytest-mh-ansible: {err}") from None
    unreachable = option_or_ini(config, "mh_unreachable", "error")
    if unreachable not in ("error", "skip"):
        raise pytest.UsageError(f"ini option mh_unreachable: {unreachable!r} is not 'error' or 'skip'")
    unreverted_mode = str(config.getini("mh_unreverted") or "warn")
    if unreverted_mode not in UNREVERTED_MODES:
        raise pytest.UsageError(f"ini option mh_unreverted: {unreverted_mode!r} is not 'warn' or 'fail'")
    executor = option_or_ini(config, "mh_executor", "warm")
    if executor not in EXECUTORS:
        raise pytest.UsageError(f"ini option mh_executor: {executor!r} is not 'warm' or 'standard'")
    options = SessionOptions(
        sources=tuple(sources),
        source_labels=tuple(label for _, label in given),
        executor=executor,
        default_domain=str(config.getini("mh_default_domain") or "default"),
        role_groups=_role_groups(config),
        unreachable=unreachable,
        # Relative to the rootdir, as the inventory read them (its errors name them as written);
        # playbooks run in another directory, so they get them absolute.
        vault_password_files=tuple(_absolute(config, path) for path in vault_files),
        vault_ids=tuple(_absolute_vault_id(config, vault_id) for vault_id in vault_ids),
        playbook_dirs=tuple(_playbook_dirs(config)),
        **parallel.lease_options(config),
        record_calls=export.export_mode(config) != "never",
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
    config.pluginmanager.register(_UnrevertedSummary(config), "mh-ansible-unreverted")
    reporting.configure(config)
    crash_check.register(config)
    recovered.register(config)
    drift_check.register(config)
    parallel.register(config, session)
    export.register(config)


class _HookEvents:
    """Relays the session's events to the ``pytest_mh_*`` hooks (see hookspecs.py), for every plugin to hear."""

    def __init__(self, hook: Any) -> None:
        self._hook = hook

    def host_setup(self, host: MultihostHost, error: BaseException | None) -> None:
        self._hook.pytest_mh_host_setup(host=host, error=error)

    def host_recovered(self, host: MultihostHost, restored: list[str], left: list[str], skipped: list[str]) -> None:
        self._hook.pytest_mh_host_recovered(host=host, restored=restored, left=left, skipped=skipped)

    def topology_setup(self, mark: TopologyMark, hosts: list[MultihostHost], error: BaseException | None) -> None:
        self._hook.pytest_mh_topology_setup(mark=mark, hosts=hosts, error=error)

    def topology_teardown(self, mark: TopologyMark, hosts: list[MultihostHost], error: BaseException | None) -> None:
        self._hook.pytest_mh_topology_teardown(mark=mark, hosts=hosts, error=error)

    def session_teardown(self, hosts: list[MultihostHost], errors: list[Exception]) -> None:
        self._hook.pytest_mh_session_teardown(hosts=hosts, errors=errors)


def _absolute(config: pytest.Config, path: str) -> str:
    full = os.path.expanduser(path)
    return full if os.path.isabs(full) else str(config.rootpath / full)


def _absolute_vault_id(config: pytest.Config, vault_id: str) -> str:
    """``label@file`` (or ``file``) with the file made absolute; ``label@prompt`` is left to the inventory."""
    label, sep, path = vault_id.partition("@")
    if not sep:
        return _absolute(config, vault_id)
    if path in ("prompt", "prompt_ask_vault_pass"):
        return vault_id
    return f"{label}@{_absolute(config, path)}"


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


def pytest_report_header(config: pytest.Config) -> list[str]:
    return pytest_mh_cli.mhc_header(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    pytest_mh_cli.remove_mhc_inventory(config)
    lab = config.stash.get(LAB_KEY, None)
    if lab is not None:
        del config.stash[LAB_KEY]
        lab.down()


def _session(config: pytest.Config) -> MultihostSession | None:
    return config.stash.get(SESSION_KEY, None)


# -- parametrization ------------------------------------------------------------------------------
def _mark_class(config: pytest.Config) -> type[TopologyMark]:
    """The project's mark class (``registry.topology_mark``), with or without an inventory.

    Without an inventory the plugin stays inert, but the project's markers must still parse as
    they would with one (same node ids, skipped with the reason), so its registrations are asked.
    """
    session = _session(config)
    if session is not None:
        return session.registry.mark_class
    registry = config.stash.get(REGISTRY_KEY, None)
    if registry is None:
        from .registry import Registry

        registry = config.stash[REGISTRY_KEY] = Registry()
        config.hook.pytest_mh_register(registry=registry)
    return registry.mark_class


def _check_topology_name_shapes(config: pytest.Config, nodeid: str, marks: list[TopologyMark]) -> str:
    """Why ``marks`` clash with a topology of the same name but another shape in an earlier test ("" if none).

    The session sets a topology up once per name: two shapes under one name would silently share the first.
    """
    seen = config.stash.setdefault(TOPOLOGY_NAMES_KEY, {})
    for mark in marks:
        first = seen.setdefault(mark.name, (nodeid, mark))
        other_id, other = first
        if other is not mark and other.topology != mark.topology:
            return (
                f"{nodeid}: topology {mark.name!r} ({mark.topology.describe()}) has the name of a different topology "
                f"in {other_id} ({other.topology.describe()}); give one of them another name"
            )
    return ""


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    markers = list(metafunc.definition.iter_markers("topology"))
    if not markers:
        return
    config = metafunc.config
    try:
        marks = _mark_class(config).expand(
            metafunc.definition, default_domain=str(config.getini("mh_default_domain") or "default")
        )
    except TopologyMarkError as err:
        error = str(err)
    else:
        error = _check_topology_name_shapes(config, metafunc.definition.nodeid, marks)
    if error:  # outside the except block: the message is printed once, without "During handling..."
        pytest.fail(error, pytrace=False)
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
    # as pytest-mh: --mh-topology and --mh-ignore-preferred-topology run every topology a test names
    preferred_only = not only and not config.getoption("mh_ignore_preferred_topology")
    if only:
        _check_topology_names(only, items)
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
        if mark is not None and preferred_only and pytest_mh_cli.preferred_topology(item) not in (None, mark.name):
            deselected.append(item)
            continue
        if mark is not None:
            if mh_session is None:
                item.add_marker(pytest.mark.skip(reason=config.stash.get(NO_INVENTORY_KEY, NO_INVENTORY)))
            else:
                resolved = mh_session.resolve(mark, pool)
                if isinstance(resolved, str):
                    item.add_marker(pytest.mark.skip(reason=_with_limit(config, resolved)))
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


def _with_limit(config: pytest.Config, reason: str) -> str:
    """A skip reason that says when ``--mh-limit`` took hosts away: the inventory is bigger than it looks."""
    limit = config.getoption("mh_limit")
    return f"{reason} (with --mh-limit {limit!r}: only the hosts it matches are used)" if limit else reason


def _check_topology_names(wanted: set[str], items: list[pytest.Item]) -> None:
    """``--mh-topology NAME`` that no collected test has is a typo, not an empty selection."""
    known = sorted({mark.name for mark in map(_item_mark, items) if mark is not None})
    unknown = sorted(wanted - set(known))
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise pytest.UsageError(
            f"--mh-topology {names}: no collected test has this topology "
            f"(known: {', '.join(known) if known else 'none, no collected test has a topology'})"
        )


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
        pytest.skip(_with_limit(request.config, active.skip_reason))
    mh_session.check(active)
    fixture = mh_session.new_fixture(active, request)
    item.stash[FIXTURE_KEY] = fixture
    check_skips(request, fixture)
    mode = _unreverted_mode(item)
    journal = mh_session.journal
    start = (len(journal.history), len(journal.unreverted))
    hosts = list(dict.fromkeys(fixture.hosts))
    request.config.hook.pytest_mh_test_setup(item=item, hosts=hosts)
    journal.open("test")
    try:
        fixture._setup()
    except BaseException as err:
        # What setup changed is undone before the error is reported; a failing rollback is reported with it.
        errors = _finish_test(item, fixture, journal, start, mode, setup_failed=True)
        if errors and isinstance(err, Exception):
            raise TeardownExceptionGroup(
                f"{item.nodeid}: setup failed ({type(err).__name__}: {err}), and its rollback too", [err, *errors]
            ) from None
        raise
    yield fixture
    _finish_test(item, fixture, journal, start, mode)
    request.config.hook.pytest_mh_test_teardown(item=item, hosts=hosts)


UNREVERTED_MODES = ("warn", "fail")


def _unreverted_mode(item: pytest.Item) -> str:
    """``@pytest.mark.mh_unreverted("fail")``, else the ini option ``mh_unreverted``."""
    marker = item.get_closest_marker("mh_unreverted")
    if marker is None:
        return str(item.config.getini("mh_unreverted") or "warn")
    value = marker.args[0] if marker.args else marker.kwargs.get("mode")
    if value not in UNREVERTED_MODES:
        raise MultihostError(f"{item.nodeid}: @pytest.mark.mh_unreverted takes 'warn' or 'fail', got {value!r}")
    return str(value)


def _finish_test(
    item: pytest.Item,
    fixture: MultihostFixture,
    journal: RollbackJournal,
    start: tuple[int, int],
    mode: str,
    *,
    setup_failed: bool = False,
) -> list[Exception]:
    """Tear the test's roles, utilities, controller and hosts down, then roll back its changes.

    :returns: The failures, when the setup failed (the caller reports them with the setup's error);
        otherwise they are raised together.
    """
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
    lines = journal.history[start[0] :]
    if lines:
        item.add_report_section("teardown", "mh rollback", "\n".join(lines))
    unreverted = [line for scope, line in journal.unreverted[start[1] :] if scope == "test"]
    if unreverted:
        item.add_report_section("teardown", UNREVERTED_SECTION, "\n".join(unreverted))
        if mode == "fail":
            listed = "\n  ".join(unreverted)
            errors.append(
                MultihostError(
                    f"{item.nodeid}: {len(unreverted)} change(s) without an inverse (mh_unreverted = fail):\n  {listed}"
                )
            )
    if errors and not setup_failed:
        raise TeardownExceptionGroup(f"teardown of {item.nodeid}: {len(errors)} step(s) failed", errors)
    return errors


UNREVERTED_SECTION = "mh not reverted"


class _UnrevertedSummary:
    """Lists every change that was not reverted at the end of the run: per test (gathered from the
    teardown reports, so xdist's controller sees its workers' too), and those of session and topology setups."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.found: list[tuple[str, str]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        for title, content in report.sections:
            if title.endswith(f"{UNREVERTED_SECTION} teardown"):
                self.found.extend((report.nodeid, line) for line in content.splitlines())

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        found = list(self.found)
        mh_session = _session(self.config)
        if mh_session is not None:
            found += [(f"({scope} scope)", line) for scope, line in mh_session.journal.unreverted if scope != "test"]
        if not found:
            return
        terminalreporter.write_sep("=", "pytest-mh-ansible: changes not reverted (no known inverse)", yellow=True)
        for owner, line in found:
            terminalreporter.write_line(f"{owner}: {line}")


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


# -- life cycle -----------------------------------------------------------------------------------
@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> Generator[None, Any, Any]:
    """Changes made by a session-scoped fixture belong to the session scope of the journal.

    The fixture may first run during a test of some topology; without this, its changes would be
    undone at the end of that test or topology while the fixture's value lives on.
    """
    mh_session = _session(request.config)
    if mh_session is None or fixturedef.scope != "session":
        return (yield)
    with mh_session.journal.into("session"):
        return (yield)


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
    if isinstance(report.longrepr, tuple):  # a skip's (path, line, reason): pytest's reports need the tuple
        path, line, reason = report.longrepr
        report.longrepr = (path, line, secrets.mask(reason))
    elif report.longrepr is not None:
        text = str(report.longrepr)
        masked = secrets.mask(text)
        if masked != text:
            report.longrepr = masked
    report.sections = [(title, secrets.mask(content)) for title, content in report.sections]


@pytest.hookimpl(tryfirst=True)  # before pytest's own explanation, which would show the values
def pytest_assertrepr_compare(config: pytest.Config, op: str, left: object, right: object) -> list[str] | None:
    """A failed comparison that involves a secret shows ``<secret #1> == <secret #2>``.

    Each secret keeps its own number, so the reader sees whether two masked values differ
    without seeing either; pytest's own diff (which would show them) is not made.
    """
    shown_left, shown_right = secrets.describe(left), secrets.describe(right)
    if shown_left is None and shown_right is None:
        return None
    return [
        f"{shown_left if shown_left is not None else secrets.mask(repr(left))} {op} "
        f"{shown_right if shown_right is not None else secrets.mask(repr(right))}",
        "(secret values are shown by number: the same number is the same value)",
    ]


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
        # a run that ended otherwise (interrupted by a signal, an internal or usage error) keeps its status
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
