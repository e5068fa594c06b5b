"""The private ControlPath directories: made, removed on close, and all removed by an exit at once."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_mh_ansible._private.ansible import control_dirs


def test_control_dirs__made_private_and_removed_with_their_content() -> None:
    path = Path(control_dirs.make("mh-cp-"))
    try:
        assert path.name.startswith("mh-cp-")
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
        (path / "socket-left-by-a-master").write_text("")
    finally:
        control_dirs.remove(str(path))
    assert not path.exists()
    control_dirs.remove_all()  # forgotten: nothing left to remove, no error
    assert not path.exists()


def test_control_dirs__remove_all_removes_only_what_was_not_removed() -> None:
    kept, closed = Path(control_dirs.make("mh-cp-")), Path(control_dirs.make("mh-cpx-"))
    control_dirs.remove(str(closed))
    closed.mkdir()  # someone else's directory of the same name now: not ours to remove
    try:
        control_dirs.remove_all()
        assert not kept.exists()
        assert closed.exists()
    finally:
        closed.rmdir()


def test_control_dirs__a_forked_child_leaves_its_parents_directories_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child forked after make() (an Ansible worker) inherits the record but not the directories."""
    path = Path(control_dirs.make("mh-cp-"))
    try:
        monkeypatch.setattr(os, "getpid", lambda: -1)  # remove_all as the child would run it
        control_dirs.remove_all()
        monkeypatch.undo()
        assert path.exists()
        control_dirs.remove_all()  # the parent's own exit
        assert not path.exists()
    finally:
        control_dirs.remove(str(path))
