"""Undo what a dead session left on a host, from the journal it kept there (:mod:`.host_journal`).

Each entry's ``steps`` are its undo as data; the same functions that the live rollback uses carry
them out (:func:`run_step`). A step that finds nothing to do (a snapshot the dead session had
already restored and removed, a user it had already deleted) does nothing, so entries whose
``done`` mark the crash kept from being written are harmless to replay.

Whose journal may be replayed? Only a session that is gone: one of this controller whose process
is gone, or one whose lease on the host expired and was taken over (it stopped renewing it). The
journal of a session of another controller that may still run (it released the host between two
topologies and keeps session-scoped changes on it) is left alone, and said so; ``pytest-mh-ansible
recover`` replays it on request.

Example::

    report = recover_host(host, lambda owner: owner == "ci-1/4242/0a1b2c")
    for line in report.lines:
        print(line)
"""

from __future__ import annotations

import json
import logging
import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import RollbackError
from . import accounts, snapshots
from .host_journal import JOURNAL_DIR, JournalFile, pending
from .inverses import package_steps, service_undo, sysctl_undo

if TYPE_CHECKING:
    from ...host import MultihostHost

__all__ = ["RecoveryReport", "read_journals", "recover_host", "run_step", "session_gone"]

log = logging.getLogger("pytest_mh_ansible.rollback")


@dataclass
class RecoveryReport:
    """What a recovery did on one host: ``lines`` to show, ``failures`` (what is left), ``skipped`` owners."""

    host: str
    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def restored_anything(self) -> bool:
        return bool(self.lines or self.failures)


def session_gone(owner: str, controller: str, *, taken_over: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether the session ``owner`` (``controller/pid/run``) is gone, so that its journal may be replayed.

    :param controller: This machine's controller id: a session of this machine is gone when its
        process is (or is no pytest any more: its pid was reused).
    :param taken_over: Owners whose expired lease on the host this session took over.
    """
    if owner in taken_over:
        return True
    parts = owner.split("/")
    if len(parts) != 3 or parts[0] != controller or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read()
    except OSError:
        return True
    return b"pytest" not in command and b"py.test" not in command and b"xdist" not in command


def read_journals(host: MultihostHost) -> list[JournalFile]:
    """Every session journal on ``host`` (one command)."""
    out = host.conn.run(
        f'for f in {JOURNAL_DIR}/*.jsonl; do [ -f "$f" ] || continue; printf "\\036%s\\n" "$f"; cat "$f"; done',
        raise_on_error=False,
    )
    files: list[JournalFile] = []
    for chunk in out.stdout.split("\x1e")[1:]:
        path, _, text = chunk.partition("\n")
        files.append(JournalFile(path, text))
    return files


def recover_host(host: MultihostHost, may_replay: Callable[[str], bool], *, me: str = "") -> RecoveryReport:
    """Replay the journals on ``host`` of the sessions ``may_replay`` says are gone (never ``me``'s).

    Each entry's steps run newest first; a file whose entries all came back is removed. An entry
    that fails is reported with why; the file keeps it (and everything older), for ``recover``.
    """
    report = RecoveryReport(host.name)
    for journal in read_journals(host):
        if journal.owner == me:
            continue
        if not may_replay(journal.owner):
            report.skipped.append(journal.owner)
            continue
        failed = False
        for entry in pending(journal):
            operation = str(entry.get("op", "?"))
            steps = entry.get("steps") or []
            if not steps:
                report.lines.append(f"[{host.name}] not restored: {operation}: {entry.get('why', 'no known inverse')}")
                continue
            try:
                said = [said for step in steps if (said := run_step(host, step))]
            except Exception as err:
                failed = True
                report.failures.append(f"[{host.name}] NOT restored: {operation}: {type(err).__name__}: {err}")
                break  # older entries may depend on this one's state: they stay for `recover`
            extra = f" ({'; '.join(said)})" if said else ""
            report.lines.append(f"[{host.name}] restored: {operation} (left by session {journal.owner}){extra}")
            mark = json.dumps({"done": [int(entry["n"])]}) + "\n"
            host.conn.run(f"printf %s {shlex.quote(mark)} >> {shlex.quote(journal.path)}", raise_on_error=False)
        if not failed:
            host.conn.run(f"rm -f {shlex.quote(journal.path)}; rmdir {JOURNAL_DIR} 2>/dev/null; true")
    return report


def run_step(host: MultihostHost, step: Mapping[str, Any]) -> str:
    """Carry out one undo step; returns a note when it found nothing to do, else ''.

    :raises RollbackError: The step failed (the host's answer says why).
    """
    kind = step.get("do")
    handler = _HANDLERS.get(str(kind))
    if handler is None:
        raise RollbackError(host.name, f"step {kind!r}", "unknown kind of undo step (a newer version wrote it?)")
    return handler(host, step)


def _restore(host: MultihostHost, step: Mapping[str, Any]) -> str:
    name = str(step["snapshot"])
    found = host.conn.run(f"test -d {shlex.quote(f'{snapshots.SNAPSHOT_DIR}/{name}')}", raise_on_error=False)
    if found.rc != 0:
        return f"snapshot {name} was restored already"
    snapshots.restore(host, name)
    return ""


def _user(host: MultihostHost, step: Mapping[str, Any]) -> str:
    state = accounts.UserState.from_dict(step["state"])
    return _account(host, f"user {state.name}", accounts.user_inverse(host, state, step.get("args") or {}))


def _group(host: MultihostHost, step: Mapping[str, Any]) -> str:
    state = accounts.GroupState.from_dict(step["state"])
    return _account(host, f"group {state.name}", accounts.group_inverse(host, state, step.get("args") or {}))


def _account(host: MultihostHost, what: str, inverse: tuple[Callable[[], None] | None, str | None]) -> str:
    """Run an account's undo as the live rollback made it from the same state, or say why there is none."""
    undo, why = inverse
    if undo is None:
        raise RollbackError(host.name, what, why or "no inverse")
    undo()
    return ""


def _service(host: MultihostHost, step: Mapping[str, Any]) -> str:
    undo = service_undo(
        host,
        name=str(step["name"]),
        module=str(step["module"]),
        args=step.get("args") or {},
        was=list(step["was"]),
        plain=bool(step.get("plain")),
    )
    if undo is not None:
        undo()
    return ""


def _packages(host: MultihostHost, step: Mapping[str, Any]) -> str:
    steps = package_steps(
        host,
        before=step["before"],
        held=step.get("held") or [],
        dpkg=bool(step["dpkg"]),
        wanted=list(step["wanted"]),
        state=str(step["state"]),
    )
    for each in steps:
        each()
    return "" if steps else "the packages were as before"


def _sysctl(host: MultihostHost, step: Mapping[str, Any]) -> str:
    sysctl_undo(host, str(step["key"]), step.get("old"))
    return ""


_HANDLERS: dict[str, Callable[[MultihostHost, Mapping[str, Any]], str]] = {
    "restore": _restore,
    "user": _user,
    "group": _group,
    "service": _service,
    "packages": _packages,
    "sysctl": _sysctl,
}
