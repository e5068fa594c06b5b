"""The journal a session keeps on its hosts, and the recovery that replays a dead session's journal.

The journal's commands run for real with this machine's bash, in a temporary directory standing for
the host's ``/var/lib/mh-ansible/journal``.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_mh_ansible import ModuleResult, RollbackJournal
from pytest_mh_ansible._private.rollback import host_journal, recovery
from pytest_mh_ansible._private.rollback.host_journal import HostJournal, JournalFile, owner_file, owner_of, pending
from pytest_mh_ansible._private.rollback.inverses import JournalRecorder


@dataclass
class _Out:
    stdout: str
    rc: int


@dataclass
class _LocalConn:
    """Runs commands with bash, the journal directory moved to ``root``."""

    root: Path
    commands: list[str] = field(default_factory=list)

    def run(self, command: str, raise_on_error: bool = True, **kwargs: Any) -> _Out:
        self.commands.append(command)
        command = command.replace(host_journal.JOURNAL_DIR, str(self.root))
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
        if raise_on_error and done.returncode != 0:
            raise AssertionError(f"{command!r}: {done.stderr}")
        return _Out(done.stdout, done.returncode)

    def _mh_script(self, source: bytes, request: Any) -> None:
        return None


@dataclass
class _Modules:
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def run(self, module: str, args: Any = None, **kwargs: Any) -> ModuleResult:
        self.calls.append((module, {**(args or {}), **kwargs}))
        return ModuleResult.from_raw("server1", module, {"changed": True})


@dataclass
class _Host:
    conn: _LocalConn
    name: str = "server1"
    ansible: _Modules = field(default_factory=_Modules)


def _file(root: Path, owner: str) -> Path:
    return root / Path(owner_file(owner)).name


def test_owner_file__names_the_owner_and_back() -> None:
    path = owner_file("ci-1/4242/0a1b2c")
    assert path == "/var/lib/mh-ansible/journal/ci-1~4242~0a1b2c.jsonl"
    assert owner_of(path) == "ci-1/4242/0a1b2c"


def test_host_journal__entries_before_changes_marks_batched_file_gone_at_the_end(tmp_path: Path) -> None:
    host: Any = _Host(_LocalConn(tmp_path))
    persist = HostJournal("ci-1/4242/0a1b2c")
    one = persist.begin(host, "ansible.builtin.copy dest=/etc/a", [{"do": "restore", "snapshot": "mh-x-1"}])
    persist.done(host, one)
    two = persist.begin(host, "ansible.builtin.user name=u", [], why="no inverse")
    journal = JournalFile(persist.path, _file(tmp_path, persist.owner).read_text())
    assert [entry["n"] for entry in pending(journal)] == [two]  # the mark went with the second entry
    assert journal.entries[1]["why"] == "no inverse"
    persist.done(host, two)
    persist.flush()
    assert pending(JournalFile(persist.path, _file(tmp_path, persist.owner).read_text())) == []
    assert oct(_file(tmp_path, persist.owner).stat().st_mode & 0o777) == oct(0o600)
    persist.finish(host)
    assert not _file(tmp_path, persist.owner).exists()
    assert persist.hosts == []


def test_journal_file__a_line_cut_by_the_crash_is_left_out() -> None:
    text = '{"n":1,"op":"a","steps":[]}\n{"n":2,"op":"b","steps":[]}\n{"done":[1]}\n{"n":3,"op":"c","st'
    journal = JournalFile("/x/a~1~b.jsonl", text)
    assert [entry["op"] for entry in pending(journal)] == ["b"]
    assert journal.unreadable == 1


def test_recorder__writes_the_undo_before_the_change_and_marks_it_when_undone(tmp_path: Path) -> None:
    host: Any = _Host(_LocalConn(tmp_path))
    persist = HostJournal("ci-1/4242/0a1b2c")
    journal = RollbackJournal()
    journal.on_close.append(lambda scope: persist.flush())
    recorder = JournalRecorder(journal, persist=persist)
    journal.open("test")
    token = recorder.prepare(host, "ansible.builtin.copy", {"dest": "/etc/a.conf"}, revert_paths=None)
    written = JournalFile(persist.path, _file(tmp_path, persist.owner).read_text())
    assert [entry["op"] for entry in pending(written)] == ["ansible.builtin.copy dest=/etc/a.conf"]
    assert written.entries[0]["steps"][0]["do"] == "restore"
    assert written.entries[0]["steps"][0]["snapshot"].startswith(f"mh-{host_journal.RUN_ID}-")
    recorder.commit(token, ModuleResult.from_raw("server1", "ansible.builtin.copy", {"changed": True}))
    journal.close("test")
    assert pending(JournalFile(persist.path, _file(tmp_path, persist.owner).read_text())) == []


@pytest.mark.parametrize(
    ("owner", "gone"),
    [
        (f"here/{os.getpid()}/run", False),  # this very process
        ("here/999999999/run", True),  # no such process
        ("elsewhere/1/run", False),  # another controller: maybe alive
    ],
    ids=["me", "dead-pid", "other-controller"],
)
def test_session_gone__by_pid_on_this_machine_never_for_another_controller(owner: str, gone: bool) -> None:
    assert recovery.session_gone(owner, "here") is gone


def test_session_gone__another_controller_whose_lease_was_taken_over() -> None:
    assert recovery.session_gone("elsewhere/1/run", "here", taken_over={"elsewhere/1/run"})


def test_recover_host__replays_newest_first_skips_live_and_removes_the_file(tmp_path: Path) -> None:
    host: Any = _Host(_LocalConn(tmp_path))
    dead = HostJournal("here/999999999/dead")
    dead.begin(host, "ansible.builtin.sysctl name=net.x", [{"do": "sysctl", "key": "net.x", "old": None}])
    dead.begin(host, "ansible.builtin.copy dest=/etc/a", [{"do": "restore", "snapshot": "mh-gone-1"}])
    alive = HostJournal("elsewhere/1/run")
    alive.begin(host, "ansible.builtin.copy dest=/etc/b", [{"do": "restore", "snapshot": "mh-b"}])
    report = recovery.recover_host(host, lambda owner: recovery.session_gone(owner, "here"))
    assert report.lines == [
        "[server1] restored: ansible.builtin.copy dest=/etc/a (left by session here/999999999/dead) "
        "(snapshot mh-gone-1 was restored already)",
        "[server1] restored: ansible.builtin.sysctl name=net.x (left by session here/999999999/dead)",
    ]
    assert report.skipped == ["elsewhere/1/run"]
    assert not _file(tmp_path, dead.owner).exists()
    assert _file(tmp_path, alive.owner).exists()


def test_recover_host__a_failing_step_keeps_the_rest_and_says_what_is_left(tmp_path: Path) -> None:
    host: Any = _Host(_LocalConn(tmp_path))
    dead = HostJournal("here/999999999/dead")
    dead.begin(host, "old change", [{"do": "restore", "snapshot": "mh-gone-1"}])
    dead.begin(host, "newer change", [{"do": "no-such-kind"}])
    report = recovery.recover_host(host, lambda owner: True)
    assert report.lines == []
    assert report.failures == [
        "[server1] NOT restored: newer change: RollbackError: server1: could not revert step 'no-such-kind': "
        "unknown kind of undo step (a newer version wrote it?)"
    ]
    assert _file(tmp_path, dead.owner).exists()  # kept, for `recover` once fixed
