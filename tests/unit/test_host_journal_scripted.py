"""The journal's lines written by the agent's snapshot scripts: a file change's entry, its undo's done mark.

The snapshot and restore scripts run for real, in a child Python as the agent runs them; the
journal's shell commands with this machine's bash. Temporary directories stand for the host's
``/var/lib/mh-ansible/journal`` and ``snapshots``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_mh_ansible import ModuleError, ModuleResult, RollbackJournal
from pytest_mh_ansible._private.rollback import host_journal, snapshots
from pytest_mh_ansible._private.rollback.host_journal import HostJournal, JournalFile, _encoded, pending
from pytest_mh_ansible._private.rollback.inverses import JournalRecorder

# What the agent does with a script: REQUEST in fresh globals, the script's exit code kept.
_AGENT = (
    "import json, sys\n"
    "exec(compile(sys.stdin.buffer.read(), '<mh-script>', 'exec'),"
    " {'__name__': '__mh_script__', 'REQUEST': json.loads(sys.argv[1])})\n"
)


@dataclass
class _Out:
    stdout: str
    rc: int


@dataclass
class _AgentConn:
    """A host with an agent: commands run with bash, scripts in a child Python; the journal moved to ``root``."""

    root: Path
    snapshots: Path
    commands: list[str] = field(default_factory=list)
    scripts: list[dict[str, Any]] = field(default_factory=list)
    script_journal: Path | None = None  # where the scripts find the journal, if not in root
    lose: bool = False  # the scripts run, and their answer is lost

    def run(self, command: str, raise_on_error: bool = True, **kwargs: Any) -> _Out:
        self.commands.append(command)
        command = command.replace(host_journal.JOURNAL_DIR, str(self.root))
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
        return _Out(done.stdout, done.returncode)

    def _mh_script(self, source: bytes, request: Any) -> tuple[int, bytes, bytes]:
        self.scripts.append(request)
        request = {**request, "backup_dir": str(self.snapshots)}
        if "journal" in request:
            root = str(self.script_journal or self.root)
            lines = request["journal"]
            path = lines["path"].replace(host_journal.JOURNAL_DIR, root)
            request["journal"] = {**lines, "dir": root, "path": path}
        done = subprocess.run(
            [sys.executable, "-c", _AGENT, json.dumps(request)], input=source, capture_output=True, check=False
        )
        if self.lose:
            return 1, b"", b"the agent ended during the script"
        return done.returncode, done.stdout, done.stderr


@dataclass
class _Journal:
    """The host's view of the rollback journal: the calls it logs for an export."""

    calls: list[str] = field(default_factory=list)

    def log_call(self, host: str, kind: str, name: str, args: Any = None, **kwargs: Any) -> None:
        self.calls.append(name)

    def note(self, host: Any, text: str) -> None:
        raise AssertionError(text)


@dataclass
class _Modules:
    calls: list[str] = field(default_factory=list)
    fail: bool = False

    def run(self, module: str, args: Any = None, **kwargs: Any) -> ModuleResult:
        self.calls.append(module)
        if self.fail:
            raise ModuleError("server1", module, ModuleResult.from_raw("server1", module, {"failed": True}))
        return ModuleResult.from_raw("server1", module, {"changed": True})


@dataclass
class _Host:
    conn: _AgentConn
    name: str = "server1"
    ansible: _Modules = field(default_factory=_Modules)
    journal: _Journal = field(default_factory=_Journal)


def _lab(tmp_path: Path) -> tuple[Any, HostJournal, RollbackJournal, JournalRecorder, Path]:
    """A host with an agent, this session's journals, and a file to change (``etc/app.conf``)."""
    journal_dir, backups, etc = tmp_path / "journal", tmp_path / "snapshots", tmp_path / "etc"
    etc.mkdir()
    (etc / "app.conf").write_text("port = 1\n")
    host: Any = _Host(_AgentConn(journal_dir, backups))
    persist = HostJournal("ci-1/4242/0a1b2c")
    journal = RollbackJournal()
    journal.on_close.append(lambda scope: persist.flush())
    return host, persist, journal, JournalRecorder(journal, persist=persist), etc / "app.conf"


def _written(host: Any, persist: HostJournal) -> str:
    return (host.conn.root / Path(persist.path).name).read_text()


def _change(host: Any, recorder: JournalRecorder, conf: Path) -> None:
    """A copy to ``conf`` with its rollback recorded; the module's change made by hand."""
    token = recorder.prepare(host, "ansible.builtin.copy", {"dest": str(conf)}, revert_paths=None)
    conf.write_text("port = 2\n")
    recorder.commit(token, ModuleResult.from_raw("server1", "ansible.builtin.copy", {"changed": True}))


def test_recorder__a_file_change__its_entry_by_the_snapshot_script_its_mark_by_the_restore_script(
    tmp_path: Path,
) -> None:
    """The round trips of a file change with its rollback: one script before the change (the snapshot and the
    entry, with the marks queued for the host), one after (the restore and the mark); no command of their own."""
    host, persist, journal, recorder, conf = _lab(tmp_path)
    persist.done(host, 41)  # another change's mark, queued: it goes with the entry
    journal.open("test")
    token = recorder.prepare(host, "ansible.builtin.copy", {"dest": str(conf)}, revert_paths=None)
    assert host.conn.commands == []
    assert [request["op"] for request in host.conn.scripts] == ["snapshot"]
    name = host.conn.scripts[0]["name"]
    operation = f"ansible.builtin.copy dest={conf}"
    assert _written(host, persist) == _encoded(
        [{"done": [41]}, {"n": 1, "op": operation, "steps": [{"do": "restore", "snapshot": name}]}]
    )  # the lines, byte for byte, that HostJournal.begin writes
    assert oct(host.conn.root.stat().st_mode & 0o777) == oct(0o700)
    assert oct((host.conn.root / Path(persist.path).name).stat().st_mode & 0o777) == oct(0o600)
    assert persist.hosts == [host]  # the file is finished at the end of the session
    conf.write_text("port = 2\n")
    recorder.commit(token, ModuleResult.from_raw("server1", "ansible.builtin.copy", {"changed": True}))
    journal.close("test")
    assert host.conn.commands == []  # nothing left for the flush
    assert [request["op"] for request in host.conn.scripts] == ["snapshot", "restore"]
    assert conf.read_text() == "port = 1\n"
    assert _written(host, persist).endswith(_encoded([{"done": [1]}]))
    assert pending(JournalFile(persist.path, _written(host, persist))) == []
    assert host.ansible.calls == []
    assert host.journal.calls == ["mh_ansible.rollback.snapshot", "mh_ansible.rollback.restore"]  # for an export


def test_recorder__the_snapshot_script_could_not_write_the_entry__written_apart_with_the_marks(
    tmp_path: Path,
) -> None:
    host, persist, journal, recorder, conf = _lab(tmp_path)
    host.conn.script_journal = tmp_path / "etc" / "app.conf" / "journal"  # under a file: no directory there
    persist.done(host, 41)
    journal.open("test")
    _change(host, recorder, conf)
    assert len(host.conn.commands) == 1  # the entry, apart, before the change
    written = JournalFile(persist.path, _written(host, persist))
    assert written.done == {41}  # the marks the script took were queued again
    assert [entry["op"] for entry in pending(written)] == [f"ansible.builtin.copy dest={conf}"]
    journal.close("test")
    assert conf.read_text() == "port = 1\n"
    assert pending(JournalFile(persist.path, _written(host, persist))) == []


def test_recorder__the_snapshot_scripts_answer_lost__the_module_snapshots_the_entry_apart_none_left_behind(
    tmp_path: Path,
) -> None:
    """The script may have written its entry: that number is marked done, the entry is written apart under a
    new one, and the queued marks are written again (twice at worst, never lost)."""
    host, persist, journal, recorder, conf = _lab(tmp_path)
    host.conn.lose = True
    persist.done(host, 41)
    journal.open("test")
    recorder.prepare(host, "ansible.builtin.copy", {"dest": str(conf)}, revert_paths=None)
    assert host.ansible.calls == ["mh_ansible.rollback.snapshot"]  # the module takes it again
    written = JournalFile(persist.path, _written(host, persist))
    assert [int(entry["n"]) for entry in written.entries] == [1, 2]  # the script's, then the one apart
    assert written.done == {41, 1}
    assert [int(entry["n"]) for entry in pending(written)] == [2]


def test_recorder__the_snapshot_script_failed__the_module_snapshots_and_the_entry_is_written_apart(
    tmp_path: Path,
) -> None:
    host, persist, journal, recorder, conf = _lab(tmp_path)
    host.conn.snapshots.write_text("not a directory\n")  # the script's snapshot fails: nothing is written
    persist.done(host, 41)
    journal.open("test")
    recorder.prepare(host, "ansible.builtin.copy", {"dest": str(conf)}, revert_paths=None)
    assert host.ansible.calls == ["mh_ansible.rollback.snapshot"]
    assert len(host.conn.commands) == 1
    written = JournalFile(persist.path, _written(host, persist))
    assert [int(entry["n"]) for entry in written.entries] == [2]
    assert written.done == {41}


def _changed_then_snapshot_gone(tmp_path: Path) -> tuple[Any, HostJournal, RollbackJournal]:
    """A change recorded in an open scope, whose snapshot's manifest is then gone: the restore script fails."""
    host, persist, journal, recorder, conf = _lab(tmp_path)
    journal.open("test")
    _change(host, recorder, conf)
    for snapshot in host.conn.snapshots.iterdir():
        (snapshot / "manifest.json").unlink()
    return host, persist, journal


def test_recorder__a_restore_that_fails__nothing_marked_the_entry_stays_for_a_later_session(
    tmp_path: Path,
) -> None:
    host, persist, journal = _changed_then_snapshot_gone(tmp_path)
    host.ansible.fail = True  # the module fails too
    with pytest.raises(BaseExceptionGroup):
        journal.close("test")
    assert host.ansible.calls == ["mh_ansible.rollback.restore"]
    assert len(pending(JournalFile(persist.path, _written(host, persist)))) == 1


def test_recorder__the_restore_script_failed_the_module_restored__the_mark_written_by_the_flush(
    tmp_path: Path,
) -> None:
    host, persist, journal = _changed_then_snapshot_gone(tmp_path)
    journal.close("test")
    assert host.ansible.calls == ["mh_ansible.rollback.restore"]
    assert len(host.conn.commands) == 1  # the mark, by the flush
    assert pending(JournalFile(persist.path, _written(host, persist))) == []


def test_restore__the_mark_carried_by_the_script__dropped_from_the_queue(tmp_path: Path) -> None:
    host, persist, _, _, conf = _lab(tmp_path)
    snapshots.take(host, [str(conf)], "mh-t-1")
    persist.done(host, 7)
    lines, numbers = persist.carry_script(host, 8)
    assert numbers == [7, 8]
    assert snapshots.Restore(host, "mh-t-1").carrying(lines)
    persist.carried(host, numbers)
    persist.flush()
    assert host.conn.commands == []
    assert JournalFile(persist.path, _written(host, persist)).done == {7, 8}
    assert os.listdir(host.conn.snapshots) == []
