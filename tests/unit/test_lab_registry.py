"""The registry of labs (name → directory) and the CLI that finds labs through it; no root needed."""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

import pytest

from pytest_mh_ansible._private.cli import main
from pytest_mh_ansible._private.lab import registry
from pytest_mh_ansible._private.lab.state import HostState, LabState
from pytest_mh_ansible.errors import LabError
from pytest_mh_ansible.lab import LabSpec


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "registry"
    monkeypatch.setenv(registry.ENV_REGISTRY, str(path))
    monkeypatch.setenv("PYTEST_MH_ANSIBLE_LAB_DIR", str(tmp_path / "labs-root"))
    return path


def _recorded_lab(directory: Path, name: str) -> Path:
    """A lab directory with a state.json, as 'lab up' leaves it (its processes are long gone)."""
    directory.mkdir(parents=True)
    spec = LabSpec.from_dict({"name": name, "hosts": ["client1:client"]})
    host = HostState("client1", ("client",), "10.213.9.11", "sysv", f"mh-{name}-client1", "mhv0")
    LabState(name=name, spec=spec.to_dict(), subnet="10.213.9.0/24", bridge="mhbr", hosts=(host,)).save(directory)
    return directory


def test_registry__register_lookup_entries_unregister(root: Path, tmp_path: Path) -> None:
    assert registry.lookup("web") is None
    assert registry.entries() == {}
    with registry.locked("web"):
        registry.register("web", tmp_path / "a" / "web")
    registry.register("db", tmp_path / "db")
    assert registry.lookup("web") == tmp_path / "a" / "web"
    assert registry.entries() == {"db": tmp_path / "db", "web": tmp_path / "a" / "web"}
    registry.unregister("web", tmp_path / "elsewhere")  # another lab's directory: the entry stays
    assert registry.lookup("web") == tmp_path / "a" / "web"
    registry.unregister("web", tmp_path / "a" / "web")
    assert registry.lookup("web") is None
    assert sorted(p.name for p in root.iterdir()) == ["db.json", "web.lock"]


def test_registry__files_have_safe_modes(root: Path, tmp_path: Path) -> None:
    with registry.locked("web"):
        registry.register("web", tmp_path / "web")
    assert stat.S_IMODE(root.stat().st_mode) & 0o022 == 0
    assert stat.S_IMODE((root / "web.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((root / "web.lock").stat().st_mode) == 0o600


def test_registry__lock_is_per_name(root: Path) -> None:
    with registry.locked("web"):
        other = os.open(root / "web.lock", os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(other)
        with registry.locked("db"):  # another name does not wait
            pass


def test_registry__refuses_a_directory_others_can_write(root: Path) -> None:
    root.mkdir()
    root.chmod(0o777)
    with pytest.raises(LabError, match=r"lab registry .*registry: writable by others \(mode 777\)"):
        registry.lookup("web")


@pytest.mark.parametrize("name", ["../etc", ".hidden", "Web", ""])
def test_registry__invalid_names_are_refused_naming_the_value(root: Path, name: str) -> None:
    with pytest.raises(LabError, match=f"lab name {name!r} is not valid"):
        registry.lookup(name)


def test_registry__bad_entry_is_an_error_naming_the_file(root: Path) -> None:
    root.mkdir()
    (root / "web.json").write_text("{not json")
    with pytest.raises(LabError, match=r"web\.json: cannot read it"):
        registry.lookup("web")


def test_cli__inventory_and_status_find_a_lab_by_name_through_the_registry(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = _recorded_lab(tmp_path / "anywhere" / "webby", "webby")
    registry.register("webby", directory)
    assert main(["lab", "inventory", "--name", "webby"]) == 0
    assert capsys.readouterr().out.strip() == str(directory / "hosts.yml")
    assert main(["lab", "status", "--name", "webby"]) == 3  # recorded, not running
    assert "client1" in capsys.readouterr().out


def test_cli__status_without_name_lists_every_lab(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lab", "status"]) == 0
    assert capsys.readouterr().out.strip() == "no lab is up"
    registry.register("webby", _recorded_lab(tmp_path / "x" / "webby", "webby"))
    _recorded_lab(tmp_path / "labs-root" / "older", "older")  # from before the registry: found under the root
    registry.register("gone", tmp_path / "removed-by-hand")
    assert main(["lab", "status"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["LAB", "HOSTS", "RUNNING", "DIRECTORY"]
    assert [line.split() for line in lines[1:]] == [
        ["older", "1", "0", str(tmp_path / "labs-root" / "older")],
        ["webby", "1", "0", str(tmp_path / "x" / "webby")],
    ]


def test_cli__down_by_name_of_a_removed_directory_forgets_the_entry(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry.register("gone", tmp_path / "removed-by-hand")
    assert main(["lab", "down", "--name", "gone"]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert registry.lookup("gone") is None
