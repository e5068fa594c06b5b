"""Unit tests of ``pytest_mh_ansible._private.local_files`` and of the directories that use it (locks, lab)."""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_mh_ansible import MultihostBackupHost, UnsafePathError
from pytest_mh_ansible._private.local_files import open_private, private_dir, write_private
from pytest_mh_ansible._private.rollback.inverses import SNAPSHOT_DIR
from pytest_mh_ansible._private.session.locks import HostLocks

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


@pytest.fixture
def wide_umask() -> Iterator[None]:
    old = os.umask(0o077)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_private_dir__exact_mode_whatever_the_umask(tmp_path: Path, wide_umask: None) -> None:
    assert _mode(private_dir(tmp_path / "a" / "b", 0o755)) == 0o755
    assert _mode(private_dir(tmp_path / "c", 0o700)) == 0o700


def test_private_dir__refuses_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(UnsafePathError, match="link: is a symbolic link"):
        private_dir(tmp_path / "link")


def test_private_dir__refuses_a_directory_others_can_write(tmp_path: Path) -> None:
    (tmp_path / "open").mkdir()
    os.chmod(tmp_path / "open", 0o1777)
    with pytest.raises(UnsafePathError, match=r"open: can be written by others \(mode 1777\)"):
        private_dir(tmp_path / "open")


@needs_root
def test_private_dir__refuses_a_directory_of_another_user(tmp_path: Path) -> None:
    (tmp_path / "theirs").mkdir(mode=0o700)
    os.chown(tmp_path / "theirs", 65534, 65534)
    with pytest.raises(UnsafePathError, match="theirs: is owned by uid 65534, not by root or by you"):
        private_dir(tmp_path / "theirs")


def test_open_private__never_through_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("keep")
    (tmp_path / "lock").symlink_to(target)
    with pytest.raises(UnsafePathError, match="lock: is a symbolic link"):
        open_private(tmp_path / "lock")
    assert target.read_text() == "keep"


def test_write_private__replaces_a_planted_symlink_and_sets_the_mode(tmp_path: Path, wide_umask: None) -> None:
    target = tmp_path / "target"
    target.write_text("keep")
    (tmp_path / "file").symlink_to(target)
    write_private(tmp_path / "file", "new", 0o755)
    assert target.read_text() == "keep"
    assert not (tmp_path / "file").is_symlink()
    assert (tmp_path / "file").read_text() == "new"
    assert _mode(tmp_path / "file") == 0o755


def test_host_locks__directory_is_private_and_exact(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        locks = HostLocks(str(tmp_path / "locks"))
        locks.acquire(["server1"])
        locks.release()
    finally:
        os.umask(old)
    assert _mode(tmp_path / "locks") == 0o700
    assert all(_mode(p) == 0o600 for p in (tmp_path / "locks").iterdir())


def test_host_locks__default_directory_is_per_user() -> None:
    assert HostLocks().directory.name == f"pytest-mh-ansible-locks-{os.geteuid()}"


def test_host_locks__refuses_a_world_writable_directory_and_symlinked_lock(tmp_path: Path) -> None:
    (tmp_path / "open").mkdir()
    os.chmod(tmp_path / "open", 0o1777)
    with pytest.raises(UnsafePathError, match="can be written by others"):
        HostLocks(str(tmp_path / "open")).acquire(["server1"])
    locks = HostLocks(str(tmp_path / "locks"))
    private_dir(locks.directory)
    locks._path("server1").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafePathError, match="is a symbolic link"):
        locks.acquire(["server1"])
    assert not (tmp_path / "elsewhere").exists()


@needs_root
def test_lab__refuses_a_lab_parent_directory_others_can_write(tmp_path: Path) -> None:
    from pytest_mh_ansible.errors import LabError
    from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

    parent = tmp_path / "shared"
    parent.mkdir()
    os.chmod(parent, 0o777)
    lab = Lab(LabSpec(name="mhunsafe", hosts=(LabHostSpec("h1", roles=("r",)),)), parent / "mhunsafe")
    with pytest.raises(LabError, match=r"lab 'mhunsafe': .*shared: can be written by others \(mode 0777\)"):
        lab.up()
    assert not (parent / "mhunsafe").exists()


@pytest.mark.parametrize("name", ["with space", "it's", 'a"b', "x; touch /tmp/pwned"])
def test_backup__remove_quotes_the_snapshot_name(name: str) -> None:
    commands: list[str] = []
    fake: Any = SimpleNamespace(conn=SimpleNamespace(run=commands.append), backup_name="default")
    MultihostBackupHost.remove_backup(fake, name)
    assert shlex.split(commands[0]) == ["rm", "-rf", "--", f"{SNAPSHOT_DIR}/{name}"]


@needs_root
def test_lab_package_cache__apts_own_partial_dir_is_left_to_apt(tmp_path: Path) -> None:
    from pytest_mh_ansible._private.lab.packages import ensure_packages

    cache = tmp_path / "cache" / "debs"
    ensure_packages([], cache)
    os.chown(cache / "partial", 42, 0)  # apt-get download hands it to its _apt user
    ensure_packages([], cache)
    assert _mode(cache) == 0o755
    os.chmod(cache, 0o777)
    with pytest.raises(UnsafePathError, match="debs: can be written by others"):
        ensure_packages([], cache)
