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
from pytest_mh_ansible._private.rollback import accounts, host_journal, recovery
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
    answers: dict[str, int] = field(default_factory=dict)  # a tool (userdel) that only exits with the value
    path: str = ""  # put first on PATH (stand-in tools)

    def run(self, command: str, raise_on_error: bool = True, **kwargs: Any) -> _Out:
        self.commands.append(command)
        for tool, rc in self.answers.items():
            command = command.replace(f"{tool} ", f"sh -c 'exit {rc}' ")
        if self.path:
            command = f"PATH={self.path}:$PATH; {command}"
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


def _recorder(tmp_path: Path, **answers: int) -> tuple[Any, HostJournal, RollbackJournal, JournalRecorder]:
    host: Any = _Host(_LocalConn(tmp_path, answers=answers))
    persist = HostJournal("ci-1/4242/0a1b2c")
    journal = RollbackJournal()
    journal.on_close.append(lambda scope: persist.flush())
    return host, persist, journal, JournalRecorder(journal, persist=persist)


@pytest.mark.parametrize(
    ("module", "name", "delete"),
    [
        ("ansible.builtin.user", "mh-no-such-user-rt1", "userdel"),
        ("ansible.builtin.group", "mh-no-such-grp-rt1", "groupdel"),
    ],
    ids=["user", "group"],
)
def test_recorder__an_account_add_and_its_undo__one_command_before_the_change_one_after(
    tmp_path: Path, module: str, name: str, delete: str
) -> None:
    """The round trips of a user or group add with its rollback, counted (#33): probe and entry in one command,
    the module call, and the undo in one command that also writes the done marks queued for the host."""
    host, persist, journal, recorder = _recorder(tmp_path, **{delete: 0})
    journal.open("test")
    token = recorder.prepare(host, module, {"name": name}, revert_paths=None)
    assert len(host.conn.commands) == 1  # the probe and the journal's entry: one round trip before the change
    entry = pending(JournalFile(persist.path, _file(tmp_path, persist.owner).read_text()))[0]
    assert entry["op"] == f"{module} name={name}"
    recorder.commit(token, ModuleResult.from_raw("server1", module, {"changed": True}))  # the module call: one
    assert len(host.conn.commands) == 1
    journal.close("test")
    assert len(host.conn.commands) == 2  # + the undo, whose command writes the done mark after it
    assert f"{delete} " in host.conn.commands[1]
    assert host.ansible.calls == []
    assert pending(JournalFile(persist.path, _file(tmp_path, persist.owner).read_text())) == []


def test_recorder__done_marks_of_a_scope__carried_by_the_undo_commands(tmp_path: Path) -> None:
    host, persist, journal, recorder = _recorder(tmp_path, userdel=0, groupdel=0)
    journal.open("test")
    for number in range(3):
        for module in ("ansible.builtin.user", "ansible.builtin.group"):
            token = recorder.prepare(host, module, {"name": f"mh-no-such-rt-{number}"}, revert_paths=None)
            recorder.commit(token, ModuleResult.from_raw("server1", module, {"changed": True}))
    assert len(host.conn.commands) == 6
    journal.close("test")
    assert len(host.conn.commands) == 6 + 6  # each undo carries its mark: none written apart
    assert pending(JournalFile(persist.path, _file(tmp_path, persist.owner).read_text())) == []


def test_recorder__an_undo_command_that_fails__the_module_undoes_and_the_mark_waits_for_the_flush(
    tmp_path: Path,
) -> None:
    host, persist, journal, recorder = _recorder(tmp_path, userdel=1)
    journal.open("test")
    token = recorder.prepare(host, "ansible.builtin.user", {"name": "mh-no-such-user-rt5"}, revert_paths=None)
    recorder.commit(token, ModuleResult.from_raw("server1", "ansible.builtin.user", {"changed": True}))
    journal.close("test")
    assert [call[1]["state"] for call in host.ansible.calls] == ["absent"]
    assert len(host.conn.commands) == 3  # probe and entry, userdel (failed: no mark), the flush of the mark
    assert pending(JournalFile(persist.path, _file(tmp_path, persist.owner).read_text())) == []


def test_recorder__marks_queued_by_other_changes__carried_along(tmp_path: Path) -> None:
    host, persist, journal, recorder = _recorder(tmp_path, groupdel=0)
    journal.open("test")
    token = recorder.prepare(host, "ansible.builtin.group", {"name": "mh-no-such-grp-rt6"}, revert_paths=None)
    recorder.commit(token, ModuleResult.from_raw("server1", "ansible.builtin.group", {"changed": True}))
    persist.done(host, 99)  # another change's mark, queued
    journal.close("test")
    assert len(host.conn.commands) == 2
    written = JournalFile(persist.path, _file(tmp_path, persist.owner).read_text())
    assert written.done == {int(written.entries[0]["n"]), 99}
    assert pending(written) == []


def test_recorder__the_entry_written_with_the_probe__a_later_session_undoes_the_same(tmp_path: Path) -> None:
    """The entry keeps the probe's output: a recovery makes the same state of it and deletes the user it made."""
    host, persist, journal, recorder = _recorder(tmp_path, userdel=0)
    journal.open("test")
    recorder.prepare(host, "ansible.builtin.user", {"name": "mh-no-such-user-rt2", "home": "/srv/x"}, revert_paths=None)
    entry = pending(JournalFile(persist.path, _file(tmp_path, persist.owner).read_text()))[0]
    state = accounts.UserState.from_dict(entry["steps"][0]["state"])
    assert state == accounts.probe_user(host, "mh-no-such-user-rt2", home="/srv/x")
    assert not state.found
    assert state.unreadable is None
    assert state.home == "/srv/x"
    host.conn.commands.clear()
    report = recovery.recover_host(host, lambda owner: True)
    assert report.failures == []
    assert report.lines == [
        f"[server1] restored: ansible.builtin.user name=mh-no-such-user-rt2 (left by session {persist.owner})"
    ]
    assert any("userdel --remove --force mh-no-such-user-rt2" in command for command in host.conn.commands)


def test_recorder__a_probe_that_fails__entry_replaced_by_why_and_nothing_deleted(tmp_path: Path) -> None:
    """#32's guarantee: an account the probe could not read is "not revertible", live and after a crash."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "getent").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "getent").chmod(0o755)
    journal_dir = tmp_path / "journal"
    host, persist, journal, recorder = _recorder(journal_dir, userdel=0)
    host.conn.path = str(bin_dir)
    journal.open("test")
    token = recorder.prepare(host, "ansible.builtin.user", {"name": "legacy", "comment": "x"}, revert_paths=None)
    written = JournalFile(persist.path, _file(journal_dir, persist.owner).read_text())
    assert [entry.get("why", "") for entry in pending(written)] == [
        "user 'legacy' could not be read (getent passwd exited 1): not revertible, nothing is deleted"
    ]
    assert len(written.entries) == 2  # the probe's entry is marked done with the second write
    assert len(host.conn.commands) == 2  # the extra write only when the change cannot be undone
    report = recovery.recover_host(host, lambda owner: True)  # as if this session died after the change
    assert report.failures == []
    assert report.lines == [
        "[server1] not restored: ansible.builtin.user name=legacy: user 'legacy' could not be read "
        "(getent passwd exited 1): not revertible, nothing is deleted"
    ]
    recorder.commit(token, ModuleResult.from_raw("server1", "ansible.builtin.user", {"changed": True}))
    journal.close("test")
    assert not any("userdel" in command for command in host.conn.commands)
    assert host.ansible.calls == []


def test_recorder__no_base64_on_the_host__the_entry_written_apart(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "base64").write_text("#!/bin/sh\nexit 127\n")
    (bin_dir / "base64").chmod(0o755)
    journal_dir = tmp_path / "journal"
    host, persist, journal, recorder = _recorder(journal_dir, groupdel=0)
    host.conn.path = str(bin_dir)
    journal.open("test")
    recorder.prepare(host, "ansible.builtin.group", {"name": "mh-no-such-grp-rt3"}, revert_paths=None)
    assert len(host.conn.commands) == 2
    entry = pending(JournalFile(persist.path, _file(journal_dir, persist.owner).read_text()))[0]
    assert entry["steps"][0]["state"] == {
        "name": "mh-no-such-grp-rt3",
        "found": False,
        "gid": None,
        "members": [],
        "local": False,
        "unreadable": None,
    }


def test_recorder__a_deletion__probe_then_snapshot_then_entry(tmp_path: Path) -> None:
    """``state=absent`` keeps the entry apart: its undo may be a snapshot, known only after the probe."""
    host, _, journal, recorder = _recorder(tmp_path)
    journal.open("test")
    recorder.prepare(
        host, "ansible.builtin.group", {"name": "mh-no-such-grp-rt4", "state": "absent"}, revert_paths=None
    )
    assert len(host.conn.commands) == 2
    assert "mh-journal-written" not in host.conn.commands[0]


def _carry(recorder: JournalRecorder, host: Any, module: str, args: dict[str, Any]) -> Any:
    """``prepare_deferred``: the command before the module is handed back, and nothing went to the host yet."""
    token, before = recorder.prepare_deferred(host, module, args, revert_paths=None)
    assert before is not None
    assert host.conn.commands == []
    assert "getent" in before.command
    assert "mh-journal-written" in before.command
    return token, before


@pytest.mark.parametrize(
    ("module", "name", "delete"),
    [
        ("ansible.builtin.user", "mh-no-such-user-rt7", "userdel"),
        ("ansible.builtin.group", "mh-no-such-grp-rt7", "groupdel"),
    ],
    ids=["user", "group"],
)
def test_recorder__the_probe_carried_with_the_module__the_same_entry_and_undo_no_command_before(
    tmp_path: Path, module: str, name: str, delete: str
) -> None:
    """#33: the probe with its entry travels with the module call (the warm agent runs it): the host sees
    the module call and the undo, and the entry is the one the command over the connection writes."""
    host, persist, journal, recorder = _recorder(tmp_path, **{delete: 0})
    agent = _LocalConn(tmp_path)  # runs the command as the agent does, right before the module
    journal.open("test")
    token, before = _carry(recorder, host, module, {"name": name})
    done = agent.run(before.command, raise_on_error=False)
    before.carried(done.rc, done.stdout)
    assert (done.rc, before.done, before.error) == (0, True, None)
    assert host.conn.commands == []
    entry = pending(JournalFile(persist.path, _file(tmp_path, persist.owner).read_text()))[0]
    assert entry["op"] == f"{module} name={name}"
    assert entry["steps"][0]["state"]["probe"]  # the probe's output, for a later session
    recorder.commit(token, ModuleResult.from_raw("server1", module, {"changed": True}))
    journal.close("test")
    assert len(host.conn.commands) == 1  # the undo, which carries the done mark
    assert f"{delete} " in host.conn.commands[0]
    assert pending(JournalFile(persist.path, _file(tmp_path, persist.owner).read_text())) == []


def test_recorder__a_carried_probe_that_could_not_write_the_entry__written_apart_then_the_module(
    tmp_path: Path,
) -> None:
    """The carried command exits non-zero when the entry was not written (the agent holds the module back):
    the entry is written over the connection as without a carrier, from the probe's output, before the module."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "base64").write_text("#!/bin/sh\nexit 127\n")
    (bin_dir / "base64").chmod(0o755)
    journal_dir = tmp_path / "journal"
    host, persist, journal, recorder = _recorder(journal_dir, groupdel=0)
    agent = _LocalConn(journal_dir, path=str(bin_dir))
    journal.open("test")
    token, before = _carry(recorder, host, "ansible.builtin.group", {"name": "mh-no-such-grp-rt8"})
    done = agent.run(before.command, raise_on_error=False)
    assert done.rc != 0
    before.carried(done.rc, done.stdout)
    assert len(host.conn.commands) == 1  # the entry, written apart
    entry = pending(JournalFile(persist.path, _file(journal_dir, persist.owner).read_text()))[0]
    assert entry["steps"][0]["state"]["found"] is False
    recorder.commit(token, ModuleResult.from_raw("server1", "ansible.builtin.group", {"changed": True}))
    journal.close("test")
    assert any("groupdel " in command for command in host.conn.commands)


def test_recorder__a_carried_probe_whose_entry_cannot_be_written_at_all__it_raises_and_nothing_is_recorded(
    tmp_path: Path,
) -> None:
    """As without a carrier: when no entry can be written, the caller gets the error and the module is not run."""
    blocked = tmp_path / "journal"
    blocked.write_text("a file where the journal's directory should be\n")
    host, _, journal, recorder = _recorder(blocked, userdel=0)
    journal.open("test")
    _, before = _carry(recorder, host, "ansible.builtin.user", {"name": "mh-no-such-user-rt9"})
    done = _LocalConn(blocked).run(before.command, raise_on_error=False)
    with pytest.raises(OSError, match="could not write the rollback journal"):
        before.carried(done.rc, done.stdout)
    assert isinstance(before.error, OSError)
    journal.close("test")
    assert not any("userdel" in command for command in host.conn.commands)


def test_recorder__a_carried_probe_whose_answer_was_lost__not_reverted_nothing_deleted(tmp_path: Path) -> None:
    """The agent went away during the call: the account's before-state is unknown, so the change is reported
    and nothing is deleted; the entry the host may hold is marked done (no later session acts on it)."""
    host, persist, journal, recorder = _recorder(tmp_path, userdel=0)
    journal.open("test")
    token, before = _carry(recorder, host, "ansible.builtin.user", {"name": "mh-no-such-user-rt10"})
    _LocalConn(tmp_path).run(before.command)  # it ran on the host; its answer never came
    before.lost("the warm agent ended")
    recorder.commit(token, ModuleResult.from_raw("server1", "ansible.builtin.user", {"changed": True}))
    journal.close("test")
    said = [line for line in journal.history if "not reverted" in line]
    assert any("was not read back (the warm agent ended): not revertible" in line for line in said), said
    assert not any("userdel" in command for command in host.conn.commands)
    assert pending(JournalFile(persist.path, _file(tmp_path, persist.owner).read_text())) == []
