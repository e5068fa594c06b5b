"""The journal's snapshot script (the collection's code run by the agent): the modules' layout and restore."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

from pytest_mh_ansible._private.rollback.snapshots import script_source


def _run(request: dict[str, Any]) -> dict[str, Any]:
    """What the agent does with the script: run it with ``REQUEST`` in fresh globals; its one line of JSON."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(script_source(), "<mh-script>", "exec"), {"__name__": "__mh_script__", "REQUEST": request})
    lines = out.getvalue().splitlines()
    assert len(lines) == 1, lines
    return dict(json.loads(lines[0]))


def test_snapshot_then_restore__content_mode_and_new_files_back_snapshot_removed(tmp_path: Path) -> None:
    backups, conf = tmp_path / "snapshots", tmp_path / "etc" / "app.conf"
    conf.parent.mkdir()
    conf.write_text("port = 1\n")
    conf.chmod(0o640)
    later = tmp_path / "etc" / "new.conf"
    taken = _run({"op": "snapshot", "paths": [str(conf), str(later)], "name": "mh-1", "backup_dir": str(backups)})
    assert taken == {"bytes": len("port = 1\n"), "paths": [str(conf), str(later)]}
    manifest = json.loads((backups / "mh-1" / "manifest.json").read_text())  # the modules' layout
    assert [root["records"][0]["type"] for root in manifest["roots"]] == ["file", "absent"]

    conf.write_text("port = 2\n")
    conf.chmod(0o600)
    later.write_text("x\n")
    restored = _run({"op": "restore", "name": "mh-1", "backup_dir": str(backups), "remove": True})
    assert restored == {"restored": 2, "warnings": []}
    assert conf.read_text() == "port = 1\n"
    assert os.stat(conf).st_mode & 0o777 == 0o640
    assert not later.exists()
    assert not (backups / "mh-1").exists()


def test_snapshot_from_missing_parents__starts_at_the_topmost_missing_directory(tmp_path: Path) -> None:
    """For a module that creates missing parents: the snapshot (and the paths it answers) starts at the
    topmost missing one, so the restore removes the directories the module made, not only the file."""
    backups, etc = tmp_path / "snapshots", tmp_path / "etc"
    etc.mkdir()
    deep, beside = etc / "app.d" / "sub" / "x.conf", etc / "y.conf"
    request = {"op": "snapshot", "name": "mh-4", "backup_dir": str(backups), "missing_parents": True}
    taken = _run({**request, "paths": [str(deep), str(etc / "app.d" / "z.conf"), str(beside)]})
    assert taken["paths"] == [str(etc / "app.d"), str(beside)]
    deep.parent.mkdir(parents=True)
    deep.write_text("new\n")
    beside.write_text("new\n")
    assert _run({"op": "restore", "name": "mh-4", "backup_dir": str(backups), "remove": True})["warnings"] == []
    assert sorted(p.name for p in etc.iterdir()) == []


def test_errors__an_answer_the_caller_turns_into_the_module_call(tmp_path: Path) -> None:
    """The caller falls back to the module on any error: its message is the one users see."""
    backups = str(tmp_path / "snapshots")
    relative = _run({"op": "snapshot", "paths": ["etc/app.conf"], "name": "mh-2", "backup_dir": backups})
    assert relative == {"error": "path 'etc/app.conf' is not absolute"}
    missing = _run({"op": "restore", "name": "mh-3", "backup_dir": backups, "remove": True})
    assert "snapshot 'mh-3' not found" in missing["error"]
    bad_name = _run({"op": "restore", "name": "../x", "backup_dir": backups, "remove": True})
    assert "must be letters" in bad_name["error"]


def test_journal_lines__appended_once_the_work_succeeded__as_the_shell_command_does(tmp_path: Path) -> None:
    """Directory 0700 with its parents, file 0600, appended; an unwritable journal is said, the work stands."""
    backups, conf, journal = tmp_path / "snapshots", tmp_path / "app.conf", tmp_path / "var" / "journal"
    conf.write_text("port = 1\n")
    lines = {"dir": str(journal), "path": str(journal / "o.jsonl"), "text": '{"n":1,"op":"x","steps":[]}\n'}
    request = {"op": "snapshot", "paths": [str(conf)], "name": "mh-5", "backup_dir": str(backups), "journal": lines}
    assert _run(request)["journal"] is True
    assert _run({**request, "name": "mh-6", "journal": {**lines, "text": '{"done":[1]}\n'}})["journal"] is True
    assert (journal / "o.jsonl").read_text() == '{"n":1,"op":"x","steps":[]}\n{"done":[1]}\n'
    assert [oct(p.stat().st_mode & 0o777) for p in (journal.parent, journal, journal / "o.jsonl")] == [
        oct(0o700),
        oct(0o700),
        oct(0o600),
    ]
    restored = _run({"op": "restore", "name": "mh-5", "backup_dir": str(backups), "remove": True, "journal": lines})
    assert restored["journal"] is True
    failed = _run({"op": "restore", "name": "mh-5", "backup_dir": str(backups), "remove": True, "journal": lines})
    assert "journal" not in failed  # the restore failed: nothing is marked
    assert (journal / "o.jsonl").read_text().count("\n") == 3
    unwritable = _run({**request, "name": "mh-7", "journal": {**lines, "dir": str(conf / "journal")}})
    assert unwritable["bytes"] == len("port = 1\n")
    assert unwritable["journal"].startswith("NotADirectoryError")
