"""pytest-mh's options held back for the real pytest-mh, ``preferred_topology``, the ``pytest_mh`` hook's priority."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_mh_ansible import KnownTopologyBase, Topology, TopologyDomain, TopologyMark
from pytest_mh_ansible._private import alias, pytest_mh_cli


class _Group:
    def __init__(self) -> None:
        self.added: list[tuple[str, ...]] = []

    def addoption(self, *opts: str, **attrs: Any) -> None:
        self.added.append(opts)


class _Manager:
    def __init__(self, plugins: dict[str, object]) -> None:
        self.plugins = plugins

    def get_plugin(self, name: str) -> object | None:
        return self.plugins.get(name)


def _declare(held: pytest_mh_cli.HeldOptions) -> None:
    held.addoption("--mh-topology", action="append")
    held.addoption("--mh-lab")
    held.addoption("--mh-config")


def test_held_options__pytest_mh_names_wait_the_others_are_added_at_once() -> None:
    group = _Group()
    held = pytest_mh_cli.HeldOptions(group, holding=True)  # type: ignore[arg-type]
    _declare(held)
    assert group.added == [("--mh-lab",)]
    held.release()
    assert group.added == [("--mh-lab",), ("--mh-topology",), ("--mh-config",)]
    held.release()  # nothing twice
    assert len(group.added) == 3


def _options(monkeypatch: pytest.MonkeyPatch, installed: bool, *registered: dict[str, object]) -> list[tuple[str, ...]]:
    """The options added, with a real pytest-mh installed or not, and the plugins registered at each hook."""
    monkeypatch.setattr(alias, "real_pytest_mh_installed", lambda: installed)
    group, parser = _Group(), pytest.Parser(_ispytest=True)
    at_addoption, after_conftests = registered
    held = pytest_mh_cli.options_group(parser, group, _Manager(at_addoption))  # type: ignore[arg-type]
    _declare(held)
    pytest_mh_cli.release(parser, _Manager(after_conftests))  # type: ignore[arg-type]
    return group.added


REAL = SimpleNamespace(__name__="pytest_mh")


def test_options_group__without_a_real_pytest_mh_in_declared_order(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _options(monkeypatch, False, {}, {}) == [("--mh-topology",), ("--mh-lab",), ("--mh-config",)]


def test_options_group__left_to_a_real_pytest_mh_registered_by_a_conftest(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _options(monkeypatch, True, {}, {"pytest_mh": REAL}) == [("--mh-lab",)]


def test_options_group__left_to_a_real_pytest_mh_given_with_p(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _options(monkeypatch, True, {"pytest_mh": REAL}, {"pytest_mh": REAL}) == [("--mh-lab",)]


def test_options_group__ours_when_pytest_mh_is_installed_but_not_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _options(monkeypatch, True, {}, {}) == [("--mh-lab",), ("--mh-topology",), ("--mh-config",)]
    # the layer registered as pytest_mh (-p pytest_mh_ansible.compat.plugin): the options are this plugin's
    layer: dict[str, object] = {"pytest_mh": sys.modules["pytest_mh_ansible.plugin"]}
    assert _options(monkeypatch, True, {}, layer) == [("--mh-lab",), ("--mh-topology",), ("--mh-config",)]


def test_held_options__cover_pytest_mh_1_0_30s_options() -> None:
    assert len(pytest_mh_cli.PYTEST_MH_OPTIONS) == 11
    assert {"--mh-config", "--mh-lazy-ssh", "--mh-collect-logs", "--mh-ignore-preferred-topology"} <= (
        pytest_mh_cli.PYTEST_MH_OPTIONS
    )


PAIR = TopologyMark("pair", Topology(TopologyDomain("app", client=1, server=1)))


class Known(KnownTopologyBase):
    Pair = PAIR


class _Item:
    nodeid = "test_x.py::test_a[pair]"

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.marker = pytest.mark.preferred_topology(*args, **kwargs).mark if args or kwargs else None

    def get_closest_marker(self, name: str) -> Any:
        return self.marker


@pytest.mark.parametrize("value", [Known.Pair, PAIR, "pair"], ids=["known", "mark", "name"])
def test_preferred_topology__known_topology_mark_or_name(value: object) -> None:
    assert pytest_mh_cli.preferred_topology(_Item(value)) == "pair"  # type: ignore[arg-type]


def test_preferred_topology__none_without_the_marker() -> None:
    assert pytest_mh_cli.preferred_topology(_Item()) is None  # type: ignore[arg-type]


def test_preferred_topology__wrong_arguments_name_the_test_and_value() -> None:
    with pytest.raises(pytest.UsageError, match=r"test_x.py::test_a\[pair\]: .* takes one topology, got 2"):
        pytest_mh_cli.preferred_topology(_Item("a", "b"))  # type: ignore[arg-type]
    with pytest.raises(pytest.UsageError, match=r"test_x.py::test_a\[pair\]: .*got 42"):
        pytest_mh_cli.preferred_topology(_Item(42))  # type: ignore[arg-type]


def test_alias__put_last_serves_only_where_nothing_else_does_and_moves_first_when_asked() -> None:
    finder = alias._FINDER
    saved = list(sys.meta_path)
    try:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        alias.install(first=False)
        assert sys.meta_path[-1] is finder
        assert not alias.serves_first()
        alias.install(first=False)
        assert sys.meta_path.count(finder) == 1
        alias.install()
        assert alias.serves_first()
        assert sys.meta_path.count(finder) == 1
        alias.install(first=False)  # never back
        assert alias.serves_first()
    finally:
        sys.meta_path[:] = saved


# In a checkout beside the module; from the wheel, at the top of site-packages under the name site reads.
PTH = next(
    path
    for path in (
        Path(alias.__file__).with_name("pytest_mh_alias.pth"),
        Path(alias.__file__).parents[2] / "pytest_mh_ansible_alias.pth",
    )
    if path.exists()
)


@pytest.mark.parametrize(
    "put_in_place",
    [
        "from pytest_mh_ansible._private import alias; alias.install(first=False)",
        # as site does at start; the line imports nothing of the package until pytest_mh is imported
        f"import site, sys; site.addpackage({str(PTH.parent)!r}, {PTH.name!r}, set())\n"
        "assert 'pytest_mh_ansible' not in sys.modules",
    ],
    ids=["plugin", "pth"],
)
def test_alias__last_hook_serves_pytest_mh_and_its_submodules_as_the_layer(put_in_place: str) -> None:
    # A fresh interpreter: nothing of pytest_mh or the package imported before the hook answers.
    code = (
        f"{put_in_place}\n"
        "import pytest_mh.conn, pytest_mh.utils.fs\n"
        "print(pytest_mh.__name__, pytest_mh.conn.__name__, pytest_mh.utils.fs.__name__)\n"
        "from pytest_mh_ansible._private import alias\n"
        "print(alias.real_pytest_mh_installed())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "pytest_mh_ansible.compat", "pytest_mh_ansible.compat.conn", "pytest_mh_ansible.compat.utils.fs", "False",
    ]  # fmt: skip


def test_alias__pth_is_one_import_line_after_comments() -> None:
    lines = [line for line in PTH.read_text().splitlines() if line and not line.startswith("#")]
    assert len(lines) == 1
    assert lines[0].startswith("import sys; ")  # site runs only lines that start with "import"
