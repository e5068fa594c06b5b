"""pytest-mh's command line on this plugin, and giving way to the real pytest-mh where a suite runs on it.

pytest-mh 1.0.30 declares eleven options (:data:`PYTEST_MH_OPTIONS`); this plugin accepts each with
the same meaning, so that a suite's CI command line runs unchanged. Two plugins cannot declare one
option, and the real pytest-mh is registered late, by a conftest's ``pytest_plugins = ("pytest_mh",)``,
after this plugin's options are declared. So where a real pytest-mh is installed, the options both
declare are held back (:class:`HeldOptions`) until the initial conftests are loaded: then they are
this plugin's if the real pytest-mh plugin is not registered, and the real one's if it is (and this
plugin stands aside for the run, see ``plugin.pytest_configure``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any

import pytest

from ..marks import KnownTopologyBase, TopologyMark
from . import alias
from .options import add_flag

__all__ = [
    "MHC_KEY",
    "PYTEST_MH_OPTIONS",
    "HeldOptions",
    "add_options",
    "mhc_header",
    "mhc_inventory",
    "options_group",
    "preferred_topology",
    "real_plugin",
    "release",
    "remove_mhc_inventory",
]

PYTEST_MH_OPTIONS = frozenset(
    {
        "--mh-config",
        "--mh-log-path",
        "--mh-lazy-ssh",
        "--mh-ignore-preferred-topology",
        "--mh-topology",
        "--mh-not-topology",
        "--mh-exact-topology",
        "--mh-collect-artifacts",
        "--mh-artifacts-dir",
        "--mh-compress-artifacts",
        "--mh-collect-logs",
    }
)
"""The options of pytest-mh 1.0.30's plugin (its ``pytest --help``)."""

MODES = ("never", "on-failure", "always")


class HeldOptions:
    """An option group that, while holding, adds the options pytest-mh also declares only on :meth:`release`.

    Every other call goes to the wrapped group at once; so does every call when not holding (the
    options keep their order in ``--help``). Example::

        held = HeldOptions(parser.getgroup("mh-ansible"), holding=True)
        held.addoption("--mh-topology", action="append")  # held
        held.addoption("--mh-lab")  # added now
        held.release()  # the real pytest-mh is not registered: add --mh-topology too
    """

    def __init__(self, group: pytest.OptionGroup, *, holding: bool) -> None:
        self._group = group
        self._holding = holding
        self._held: list[tuple[tuple[str, ...], dict[str, Any]]] = []

    def addoption(self, *opts: str, **attrs: Any) -> None:
        if self._holding and PYTEST_MH_OPTIONS.intersection(opts):
            self._held.append((opts, attrs))
        else:
            self._group.addoption(*opts, **attrs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._group, name)

    def release(self) -> None:
        """Add the held options to the group (this plugin serves them), and stop holding."""
        held, self._held, self._holding = self._held, [], False
        for opts, attrs in held:
            self._group.addoption(*opts, **attrs)

    def drop(self) -> None:
        """Forget the held options (the real pytest-mh declares them)."""
        self._held = []


_WAITING: weakref.WeakKeyDictionary[pytest.Parser, HeldOptions] = weakref.WeakKeyDictionary()


def real_plugin(pluginmanager: pytest.PytestPluginManager) -> object | None:
    """The real pytest-mh's plugin module when it is registered in this run (not this project's layer)."""
    plugin: object | None = pluginmanager.get_plugin("pytest_mh")
    if plugin is None or str(getattr(plugin, "__name__", "")).startswith("pytest_mh_ansible"):
        return None
    return plugin


def options_group(
    parser: pytest.Parser, group: pytest.OptionGroup, pluginmanager: pytest.PytestPluginManager
) -> HeldOptions:
    """The plugin's option group at ``pytest_addoption`` time, holding pytest-mh's options where they may be its.

    Without a real pytest-mh installed, none can be registered: the options are added as declared.
    A real pytest-mh registered already (``-p pytest_mh``) keeps its options: they are held and
    dropped. Otherwise a conftest may still register it: they are held until :func:`release`.
    """
    if not alias.real_pytest_mh_installed():
        return HeldOptions(group, holding=False)
    held = HeldOptions(group, holding=True)
    if real_plugin(pluginmanager) is None:
        _WAITING[parser] = held
    return held


def release(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """After the initial conftests: add the held options unless the real pytest-mh plugin is registered now."""
    held = _WAITING.pop(parser, None)
    if held is None:
        return
    if real_plugin(pluginmanager) is not None:
        held.drop()
    else:
        held.release()


def add_options(group: pytest.OptionGroup) -> None:
    """The options of pytest-mh that this plugin had not declared for itself, with pytest-mh's meaning."""
    group.addoption(
        "--mh-config",
        dest="mh_config",
        metavar="MHC",
        default=None,
        help="pytest-mh's host file (mhc.yaml), read as an inventory (as 'pytest-mh-ansible convert-mhc' "
        "converts it; host keys are not checked, as in pytest-mh). Also with -i.",
    )
    add_flag(
        group,
        "--mh-lazy-ssh",
        help="Accepted for pytest-mh's command line: hosts are always connected when a topology first needs them.",
    )
    add_flag(
        group,
        "--mh-ignore-preferred-topology",
        help="Run every topology of a test marked @pytest.mark.preferred_topology, not only the preferred one.",
    )
    group.addoption(
        "--mh-collect-logs",
        dest="mh_collect_logs",
        nargs="?",
        const=None,
        default=None,
        choices=MODES,
        metavar="WHEN",
        help="When to write per-test logs: never, on-failure or always (default: as --mh-collect-artifacts).",
    )


# -- --mh-config ----------------------------------------------------------------------------------
MHC_KEY: pytest.StashKey[tuple[str, list[str]]] = pytest.StashKey()
"""``config.stash``: the directory of the inventory made from ``--mh-config``, and the conversion's warnings."""


def mhc_inventory(config: pytest.Config) -> tuple[str, str] | None:
    """The inventory made from ``--mh-config`` (None without it), as ``(path, the host file as written)``.

    The conversion is ``convert-mhc``'s; its inventory is written to a private temporary directory
    (playbooks read the inventory from a file) that :func:`remove_mhc_inventory` removes.

    :raises pytest.UsageError: The host file cannot be read or converted (one line naming it).
    """
    given = config.getoption("mh_config", None)
    if not given:
        return None
    from .mhc import dump_inventory, read_mhc  # YAML only when asked: the plugin's import stays light

    path = Path(os.path.expanduser(str(given)))
    if not path.is_absolute():
        path = config.invocation_params.dir / path
    try:
        conversion = read_mhc(path, source=str(given))
    except ValueError as err:
        raise pytest.UsageError(f"--mh-config {given}: {err}") from None
    directory = tempfile.mkdtemp(prefix="mh-ansible-mhc-")  # 0700: it holds the host file's passwords
    inventory = Path(directory) / "hosts.yml"
    fd = os.open(inventory, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(dump_inventory(conversion, str(given)))
    config.stash[MHC_KEY] = (directory, list(conversion.warnings))
    return str(inventory), str(given)


def mhc_header(config: pytest.Config) -> list[str]:
    """The conversion's warnings, for the report header (a warning would fail ``filterwarnings = error`` suites)."""
    _, warnings = config.stash.get(MHC_KEY, ("", []))
    return [f"mh-ansible --mh-config: {line}" for line in warnings]


def remove_mhc_inventory(config: pytest.Config) -> None:
    directory, _ = config.stash.get(MHC_KEY, ("", []))
    if directory:
        del config.stash[MHC_KEY]
        shutil.rmtree(directory, ignore_errors=True)


# -- @pytest.mark.preferred_topology ----------------------------------------------------------------
def preferred_topology(item: pytest.Item) -> str | None:
    """The topology name of the item's ``@pytest.mark.preferred_topology`` (None without one).

    As in pytest-mh, it takes one argument: a known topology, a topology mark or a name.

    :raises pytest.UsageError: Another number or kind of argument (naming the test and the value).
    """
    marker = item.get_closest_marker("preferred_topology")
    if marker is None:
        return None
    args = [*marker.args, *marker.kwargs.values()]
    if len(args) != 1:
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.preferred_topology takes one topology, got {len(args)} arguments {args!r}"
        )
    value = args[0]
    if isinstance(value, str):
        return value
    if isinstance(value, KnownTopologyBase) and isinstance(value.value, TopologyMark):
        return value.value.name
    if isinstance(value, TopologyMark):
        return value.name
    raise pytest.UsageError(
        f"{item.nodeid}: @pytest.mark.preferred_topology takes a KnownTopology, a TopologyMark or a topology name, "
        f"got {value!r}"
    )
