"""The rollback journal: scopes, where records go, and what is left to revert."""

from __future__ import annotations

import pytest

from pytest_mh_ansible import RollbackJournal, TeardownExceptionGroup


def test_journal__into_session__records_there_while_a_topology_and_a_test_are_open() -> None:
    journal = RollbackJournal()
    undone: list[str] = []
    journal.open("session")
    journal.open("topology")
    journal.open("test")
    with journal.into("session"):
        journal.record("server1", "session change", lambda: undone.append("session"))
    journal.record("server1", "test change", lambda: undone.append("test"))
    journal.close("test")
    journal.close("topology")
    assert undone == ["test"]
    assert journal.close_all() == []
    assert undone == ["test", "session"]


def test_journal__into__unknown_scope_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown rollback scope 'suite'"), RollbackJournal().into("suite"):
        pass


def test_journal__pending__lists_changes_not_reverted_newest_first_over_open_scopes() -> None:
    journal = RollbackJournal()
    journal.open("session")
    journal.record("server1", "a", lambda: None)
    journal.open("test")
    journal.record("client1", "b", lambda: None)
    assert journal.pending() == ["[client1] b", "[server1] a"]
    journal.close("test")
    assert journal.pending() == ["[server1] a"]


def test_journal__pending__while_a_scope_is_undone_still_lists_its_remaining_changes() -> None:
    journal = RollbackJournal()
    seen: list[list[str]] = []
    journal.open("test")
    journal.record("server1", "first", lambda: seen.append(journal.pending()))
    journal.record("server1", "second", lambda: None)
    journal.close("test")
    assert seen == [["[server1] first"]]


def test_journal__failed_undo__reported_and_other_steps_still_run() -> None:
    journal = RollbackJournal()
    journal.open("test")
    ran: list[str] = []
    journal.record("server1", "ok", lambda: ran.append("ok"))

    def broken() -> None:
        raise RuntimeError("host gone")

    journal.record("server1", "broken", broken)
    with pytest.raises(TeardownExceptionGroup) as info:
        journal.close("test")
    assert ran == ["ok"]
    assert [str(e) for e in info.value.exceptions] == ["server1: could not revert broken: RuntimeError: host gone"]
