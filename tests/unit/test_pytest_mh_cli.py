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


def _held() -> tuple[_Group, pytest_mh_cli.HeldOptions]:
    group = _Group()
    held = pytest_mh_cli.HeldOptions(group)  # type: ignore[arg-type]
    held.addoption("--mh-topology", action="append")
    held.addoption("--mh-lab")
    held.addoption("--mh-config")
    return group, held


def test_held_options__pytest_mh_names_wait_the_others_are_added_at_once() -> None:
    group, held = _held()
    assert group.added == [("--mh-lab",)]
    held.release()
    assert group.added == [("--mh-lab",), ("--mh-topology",), ("--mh-config",)]
    held.release()  # nothing twice
    assert len(group.added) == 3


def test_held_options__dropped_when_the_real_pytest_mh_is_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    real = SimpleNamespace(__name__="pytest_mh")
    monkeypatch.setattr(alias, "real_pytest_mh_installed", lambda: True)
    group, held = _held()
    parser = pytest.Parser(_ispytest=True)
    pytest_mh_cli.hold(parser, held, _Manager({}))  # type: ignore[arg-type]
    assert group.added == [("--mh-lab",)]  # waits: a conftest may still register the real one
    pytest_mh_cli.release(parser, _Manager({"pytest_mh": real}))  # type: ignore[arg-type]
    assert group.added == [("--mh-lab",)]
    group, held = _held()
    pytest_mh_cli.hold(parser, held, _Manager({}))  # type: ignore[arg-type]
    pytest_mh_cli.release(parser, _Manager({"pytest_mh": sys.modules["pytest_mh_ansible.plugin"]}))  # type: ignore[arg-type]
    assert ("--mh-config",) in group.added  # the layer registered as pytest_mh: the options are this plugin's


def test_held_options__added_at_once_without_a_real_pytest_mh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(alias, "real_pytest_mh_installed", lambda: False)
    group, held = _held()
    pytest_mh_cli.hold(pytest.Parser(_ispytest=True), held, _Manager({}))  # type: ignore[arg-type]
    assert len(group.added) == 3


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


PTH = Path(alias.__file__).with_name("pytest_mh_alias.pth")


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
