"""Unit tests of the journal's recorder: the write that snapshots in its own module call (no Ansible)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from test_modules import FakeExecutor
from test_utils_net import FakeConn

from pytest_mh_ansible._private.rollback.inverses import SNAPSHOT_DIR, JournalRecorder
from pytest_mh_ansible.host import MultihostHost
from pytest_mh_ansible.modules import HostModules
from pytest_mh_ansible.rollback import RollbackJournal

WRITE = "mh_ansible.rollback.write"


def _host(*results: dict[str, Any]) -> tuple[MultihostHost, FakeExecutor, FakeConn, RollbackJournal]:
    host = MultihostHost("server1", roles=("server",), domain="default", variables={})
    executor = FakeExecutor(list(results))
    conn = FakeConn({})
    journal = RollbackJournal()
    journal.open("test")
    host._conn = conn  # type: ignore[assignment]
    host._mh_journal = journal
    host._mh_modules = HostModules(host, executor, recorder=JournalRecorder(journal))
    return host, executor, conn, journal


def _written(name: str | None, changed: bool = True) -> dict[str, Any]:
    return {"changed": changed, "dest": "/etc/app.conf", "snapshot": name}


def _modules(executor: FakeExecutor) -> list[str]:
    return [call["module"] for call in executor.calls]


def test_fs_write__one_module_call_that_takes_the_snapshot_then_one_restore() -> None:
    host, executor, conn, journal = _host()
    executor.results.append(_written("placeholder"))
    host.fs.write("/etc/app.conf", "port = 1\n", mode="0640")

    assert _modules(executor) == [WRITE]  # no snapshot module, no copy action: one call
    args = executor.calls[0]["args"]
    assert (args["dest"], args["content"], args["mode"]) == ("/etc/app.conf", "port = 1\n", "0640")
    assert args["backup_dir"] == SNAPSHOT_DIR
    name = args["snapshot"]
    assert conn.commands == []  # no probe or cleanup over the connection either

    executor.results.append({"changed": True})
    journal.close("test")
    assert _modules(executor) == [WRITE, "mh_ansible.rollback.restore"]
    restore = executor.calls[1]["args"]
    assert restore == {"name": name, "backup_dir": SNAPSHOT_DIR, "remove": True}
    assert "snapshot" not in restore


def test_fs_write__second_write_of_a_path_in_the_scope_takes_no_new_snapshot() -> None:
    host, executor, _conn, journal = _host(_written("a"), _written(None))
    host.fs.write("/etc/app.conf", "one\n")
    host.fs.write("/etc/app.conf", "two\n")
    assert "snapshot" in executor.calls[0]["args"]
    assert "snapshot" not in executor.calls[1]["args"]  # the first snapshot restores the path already
    executor.results.append({"changed": True})
    journal.close("test")
    assert _modules(executor).count("mh_ansible.rollback.restore") == 1


def test_fs_write__unchanged_file_records_nothing_and_removes_nothing() -> None:
    host, executor, conn, journal = _host(_written(None, changed=False))
    assert host.fs.write("/etc/app.conf", "same\n") is False
    assert journal.entries() == []
    assert conn.commands == []  # the module dropped its own snapshot: no rm over the connection
    journal.close("test")
    assert _modules(executor) == [WRITE]


def test_fs_write__failed_write_removes_the_snapshot_it_named() -> None:
    host, executor, conn, journal = _host({"failed": True, "msg": "disk full", "snapshot": "x"})
    with pytest.raises(Exception, match="disk full"):
        host.fs.write("/etc/app.conf", "x\n")
    name = executor.calls[0]["args"]["snapshot"]
    assert conn.commands == [f"rm -rf {SNAPSHOT_DIR}/{name}"]
    assert journal.entries() == []


def test_write_in_check_mode__no_snapshot_is_asked_for() -> None:
    host, executor, _conn, journal = _host(_written(None))
    host.ansible.run(WRITE, dest="/etc/app.conf", content="x\n", check=True)
    assert "snapshot" not in executor.calls[0]["args"]
    assert journal.entries() == []


def test_recorder_without_arguments_method__still_works() -> None:
    """A ChangeRecorder written before ``arguments`` existed adds no arguments and is still called."""

    class OldRecorder:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def prepare(self, host: MultihostHost, module: str, args: Mapping[str, Any], *, revert_paths: Any) -> object:
            self.calls.append("prepare")
            return None

        def commit(self, token: object, result: object) -> None:
            self.calls.append("commit")

        def abort(self, token: object) -> None:
            self.calls.append("abort")

    host = MultihostHost("server1", roles=("server",), domain="default", variables={})
    executor = FakeExecutor([{"changed": True}])
    recorder = OldRecorder()
    HostModules(host, executor, recorder=recorder).run(WRITE, dest="/etc/a", content="x")
    assert recorder.calls == ["prepare", "commit"]
    assert executor.calls[0]["args"] == {"dest": "/etc/a", "content": "x"}
