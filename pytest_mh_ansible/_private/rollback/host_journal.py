"""The journal on the host: what a session is about to change, kept beside its snapshots, for a later session.

The rollback journal lives in the pytest process: when that process dies (``kill -9``, an OOM kill, a
lost controller), its undo steps die with it, and the hosts keep the test's changes. So before each
change the recorder also appends the change's undo, as data (:mod:`.recipes`), to a file on the host:
``/var/lib/mh-ansible/journal/<owner>.jsonl``, one JSON object a line::

    {"n": 3, "op": "ansible.builtin.user name=alice", "steps": [{"do": "user", ...}]}
    {"done": [1, 2, 3]}

A user or group entry is written by the same command that probes the account
(:meth:`HostJournal.probed`): it keeps the probe's output, from which the undo is decided, so
the probe and the entry cost one command before the change; on the warm executor over ssh, that
command travels with the module call itself (no round trip of its own). A file change's entry is
written by the script of the host's agent that takes its snapshot (:meth:`HostJournal.scripted`,
:mod:`.snapshots`), once the snapshot is taken: the snapshot and the entry cost one round trip.

``done`` lists the entries undone (or that changed nothing); they are written in batches, at the next
write to the host and when a scope closes, or by the undo itself: the command that deletes an account
(:meth:`HostJournal.carry`), the agent's script that restores a snapshot
(:meth:`HostJournal.carry_script`), each after the undo succeeded. A session that ends well removes
its file. A later session that finds a file of a session that is gone replays the entries not done,
newest first (:func:`pending`), and removes the file (see :mod:`.recovery`).

The file is written by the login user with ``become`` as the module calls are (0700 directory, 0600
file: it names the snapshots and may hold password hashes of the accounts it restores); a script of
the agent writes the same lines, as the same user, with the same modes.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...host import MultihostHost

__all__ = [
    "JOURNAL_DIR",
    "PROBE_OUTPUT",
    "RUN_ID",
    "HostJournal",
    "JournalFile",
    "ProbedEntry",
    "ScriptedEntry",
    "owner_file",
    "pending",
]

log = logging.getLogger("pytest_mh_ansible.rollback")

JOURNAL_DIR = "/var/lib/mh-ansible/journal"
"""Where the hosts keep the journals of sessions (beside the snapshots, ``/var/lib/mh-ansible/snapshots``)."""

RUN_ID = f"{os.getpid():x}{uuid.uuid4().hex[:8]}"
"""This process's mark in the names of its snapshots: unique across sessions and machines."""

PROBE_OUTPUT = "\x00mh-probe-output\x00"
"""Stands in a step given to :meth:`HostJournal.probed` for the probe's output (base64) on the host."""
_WRITTEN = "mh-journal-written"  # the last line of the command of probed(): whether the entry was appended

_SAFE = re.compile(r"[^A-Za-z0-9._~-]")


def owner_file(owner: str) -> str:
    """The journal file of session ``owner`` (``controller/pid/run``) on a host."""
    return f"{JOURNAL_DIR}/{_SAFE.sub('_', owner.replace('/', '~'))}.jsonl"


def owner_of(path: str) -> str:
    """The owner a journal file's name stands for (the inverse of :func:`owner_file`)."""
    return os.path.basename(path).removesuffix(".jsonl").replace("~", "/")


def _encoded(lines: Sequence[Mapping[str, Any]]) -> str:
    """Journal lines as the file holds them: one compact JSON object a line, keys sorted."""
    return "".join(json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n" for line in lines)


def _entry(number: int, operation: str, steps: Sequence[Mapping[str, Any]], why: str | None) -> dict[str, Any]:
    """An entry's line: its number, the change, the undo's steps, and why it has none (if said)."""
    entry: dict[str, Any] = {"n": number, "op": operation, "steps": list(steps)}
    if why is not None:
        entry["why"] = why
    return entry


class HostJournal:
    """This session's journal files on its hosts: entries written before a change, marks batched.

    Example::

        persist = HostJournal("ci-1/4242/0a1b2c")
        n = persist.begin(host, "ansible.builtin.user name=alice", [{"do": "user", ...}])
        ...                     # the change, then later its undo
        persist.done(host, n)   # queued; written with the next entry or by flush()
        persist.flush()
        persist.finish(host)    # at the end of the session: the file goes
    """

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.path = owner_file(owner)
        self._next = 0
        self._marks: dict[str, tuple[MultihostHost, list[int]]] = {}
        self._written: dict[str, MultihostHost] = {}  # hosts that have this session's file
        self._lock = threading.Lock()

    @property
    def hosts(self) -> list[MultihostHost]:
        """The hosts this session wrote a journal on (and has not finished)."""
        return list(self._written.values())

    def begin(
        self, host: MultihostHost, operation: str, steps: Sequence[Mapping[str, Any]], *, why: str | None = None
    ) -> int:
        """Append an entry before the change it undoes (with the marks queued for the host); its number.

        :param why: Why the change has no undo of its own (then ``steps`` is empty): said by a recovery.
        """
        number, lines = self._number(host)
        lines.append(_entry(number, operation, steps, why))
        self._append(host, lines)
        return number

    def scripted(
        self, host: MultihostHost, operation: str, steps: Sequence[Mapping[str, Any]], *, why: str | None = None
    ) -> ScriptedEntry:
        """:meth:`begin`'s entry (with the marks queued for the host) for a script of the host's agent to append.

        The snapshot before a file change is taken by a script of the host's agent
        (:func:`~.snapshots.take`). Written by the same script once the snapshot is taken, the entry
        costs no round trip of its own: one before the change instead of two. The script appends the
        same lines to the same file, with the same modes, as :meth:`begin`; :meth:`ScriptedEntry.read`
        settles what its answer said (when the entry was not written, the caller writes it with
        :meth:`begin`, which says why it fails).
        """
        number, lines = self._number(host)
        marks = [n for line in lines for n in line["done"]]
        lines.append(_entry(number, operation, steps, why))
        return ScriptedEntry(self, host, number, self._script_request(_encoded(lines)), marks)

    def probed(
        self, host: MultihostHost, operation: str, probe: str, steps: Sequence[Mapping[str, Any]]
    ) -> ProbedEntry:
        """An entry that keeps the output of ``probe``, and the one command that runs the probe and appends it.

        The undo of a user or group is decided from a probe of the account; written apart, the probe
        and the entry would be two round trips before the change. Here the host runs the probe and
        writes the entry, with the probe's output (base64) where a step holds :data:`PROBE_OUTPUT`; a
        later session makes the same state of it (:meth:`~.accounts.UserState.from_dict`). The
        command is the caller's to run, over the host's connection (``host.conn.run``) or with
        the module call (the warm agent runs it right before the module); :meth:`ProbedEntry.read`
        reads what it printed. It exits non-zero when the entry was not written.
        """
        number, lines = self._number(host)
        marks = [n for line in lines for n in line["done"]]
        lines.append(_entry(number, operation, steps, None))
        text = _encoded(lines)
        placeholder = json.dumps(PROBE_OUTPUT)
        before, found, after = text.partition(placeholder)
        if not found or placeholder in after:
            self._requeue(host, marks)
            raise ValueError(f"the steps of {operation!r} must hold PROBE_OUTPUT once")
        command = (
            f"o=$({probe}\n); printf '%s\\n' \"$o\"; "
            f'(umask 077; b=$(printf \'%s\\n\' "$o" | base64 -w0) && [ -n "$b" ] && '
            f'mkdir -p {JOURNAL_DIR} && printf \'%s"%s"%s\' {shlex.quote(before)} "$b" {shlex.quote(after)} '
            f">> {shlex.quote(self.path)}); w=$?; printf '{_WRITTEN}\\t%s\\n' $w; exit $w"
        )
        return ProbedEntry(self, host, number, command, marks)

    def done(self, host: MultihostHost, number: int) -> None:
        """Entry ``number`` was undone, or its call changed nothing: queued until the next write or flush."""
        with self._lock:
            self._marks.setdefault(host.name, (host, []))[1].append(number)

    def carry(self, host: MultihostHost, number: int) -> tuple[str, list[int]]:
        """A shell command that marks ``number`` and the marks queued for ``host`` done, for an undo to carry.

        An undo that is one command runs it after itself (:class:`~.accounts.CommandUndo`): the
        marks cost no round trip of their own. Once it ran, :meth:`carried` drops them from the
        queue; if it did not, the caller queues ``number`` with :meth:`done` as usual.

        :returns: The command and the numbers it marks.
        """
        numbers = self._queued_and(host, number)
        return self._append_command(_encoded([{"done": numbers}])), numbers

    def carry_script(self, host: MultihostHost, number: int) -> tuple[dict[str, str], list[int]]:
        """:meth:`carry` for a script of the host's agent: the lines that mark ``number`` and the queued marks done.

        The restore of a snapshot is a script of the host's agent (:func:`~.snapshots.restore`),
        which appends these lines once the restore succeeded: the mark costs no round trip of its
        own. Once they are written, :meth:`carried` drops the marks from the queue; if they were not,
        the caller queues ``number`` with :meth:`done` as usual.

        :returns: The script's request (the directory, the file, the text: see :meth:`_script_request`)
            and the numbers it marks.
        """
        numbers = self._queued_and(host, number)
        return self._script_request(_encoded([{"done": numbers}])), numbers

    def carried(self, host: MultihostHost, numbers: Sequence[int]) -> None:
        """What :meth:`carry` or :meth:`carry_script` gave ran on ``host``: its marks are written, no longer queued."""
        with self._lock:
            queued = self._marks.get(host.name)
            if queued is not None:
                queued[1][:] = [n for n in queued[1] if n not in numbers]
            self._written[host.name] = host

    def flush(self) -> None:
        """Write every queued mark (one command per host); a host that cannot be reached keeps them queued."""
        with self._lock:
            queued = {name: (host, numbers) for name, (host, numbers) in self._marks.items() if numbers}
            self._marks = {}
        for name, (host, numbers) in queued.items():
            try:
                self._append(host, [{"done": numbers}])
            except Exception as err:  # said, and kept: a later write carries them
                log.warning("%s: could not mark journal entries %s as done: %s", name, numbers, err)
                self._requeue(host, numbers)

    def finish(self, host: MultihostHost) -> None:
        """The session is done with ``host`` and nothing is left to undo there: its file goes."""
        with self._lock:
            self._marks.pop(host.name, None)
            self._written.pop(host.name, None)
        host.conn.run(f"rm -f {shlex.quote(self.path)}; rmdir {JOURNAL_DIR} 2>/dev/null; true", raise_on_error=False)

    def _requeue(self, host: MultihostHost, numbers: Sequence[int]) -> None:
        """Marks taken for a write that did not happen: queued again, first."""
        if numbers:
            with self._lock:
                marks = self._marks.setdefault(host.name, (host, []))[1]
                marks[:0] = [n for n in numbers if n not in marks]

    def _wrote(self, host: MultihostHost) -> None:
        """``host`` holds a journal file of this session now (finished at the end)."""
        with self._lock:
            self._written[host.name] = host

    def _queued_and(self, host: MultihostHost, number: int) -> list[int]:
        """The marks queued for ``host`` (left in the queue) and ``number``: what an undo carries."""
        with self._lock:
            return [*self._marks.get(host.name, (host, []))[1], number]

    def _number(self, host: MultihostHost) -> tuple[int, list[dict[str, Any]]]:
        """The next entry's number, and the line of the marks queued for ``host`` (taken from the queue)."""
        with self._lock:
            self._next += 1
            return self._next, self._take_marks(host.name)

    def _take_marks(self, name: str) -> list[dict[str, Any]]:
        _, numbers = self._marks.pop(name, (None, []))
        return [{"done": numbers}] if numbers else []

    def _append_command(self, text: str) -> str:
        """The shell command that appends ``text`` to this session's file (private to root, directory made)."""
        return f"(umask 077; mkdir -p {JOURNAL_DIR} && printf %s {shlex.quote(text)} >> {shlex.quote(self.path)})"

    def _script_request(self, text: str) -> dict[str, str]:
        """What a script of the host's agent needs to append ``text`` as :meth:`_append_command` does.

        The journal's directory (made with its parents, 0700), this session's file (0600 when made)
        and the text: the script appends it under umask 077, as the shell command does.
        """
        return {"dir": JOURNAL_DIR, "path": self.path, "text": text}

    def _append(self, host: MultihostHost, lines: Sequence[Mapping[str, Any]]) -> None:
        text = _encoded(lines)
        done = host.conn.run(self._append_command(text), raise_on_error=False)
        if done.rc != 0:
            raise OSError(f"{host.name}: could not write the rollback journal {self.path} (exit {done.rc})")
        self._wrote(host)


class ProbedEntry:
    """An entry of :meth:`HostJournal.probed`: its number, the command that probes and writes it, its outcome.

    Example::

        entry = persist.probed(host, "ansible.builtin.user name=alice", probe, [step])
        number, output = entry.read(host.conn.run(entry.command, raise_on_error=False).stdout)
    """

    def __init__(self, journal: HostJournal, host: MultihostHost, number: int, command: str, marks: list[int]):
        self.journal = journal
        self.host = host
        self.number = number
        self.command = command
        self._marks = marks  # the done marks the command writes along with the entry

    def read(self, stdout: str) -> tuple[int | None, str]:
        """What the command printed: ``(number, the probe's output)``; number None when the entry was not written.

        Then the caller writes its entry with :meth:`HostJournal.begin`, which says why it fails.
        """
        output, _, status = stdout.rpartition(f"{_WRITTEN}\t")
        if status.strip() != "0":
            self.journal._requeue(self.host, self._marks)  # the marks go with the caller's own entry
            return None, output if status else stdout
        self.journal._wrote(self.host)
        return self.number, output

    def unknown(self) -> None:
        """The command went to the host and its answer was lost: its marks are queued again (written twice at worst)."""
        self.journal._requeue(self.host, self._marks)


class ScriptedEntry:
    """An entry of :meth:`HostJournal.scripted`: its number, what the script appends, and its outcome.

    Example::

        entry = persist.scripted(host, "ansible.builtin.copy dest=/etc/app.conf", [step])
        take(host, ["/etc/app.conf"], name, entry=entry)   # the snapshot's script appends it, then read()
        number = entry.persisted                           # None: not written, begin() writes it apart
    """

    def __init__(
        self, journal: HostJournal, host: MultihostHost, number: int, request: dict[str, str], marks: list[int]
    ) -> None:
        self.journal = journal
        self.host = host
        self.number = number
        self.request = request
        """For the script: the journal's directory, the file and the lines (queued marks, then the entry)."""
        self.persisted: int | None = None
        """The entry's number once the script said it wrote it."""
        self._marks = marks  # the done marks the script writes along with the entry

    def read(self, written: bool | None) -> int | None:
        """What the script's answer said: written (True), not (False), or not known (None: the answer was lost).

        Not written: the marks are queued again, for the caller's own entry. Not known: the marks
        are queued again too (written twice at worst), and so is the entry's number as done: the
        script may have written it, and the caller writes the entry apart under a new number, so
        no later session acts on this one.

        :returns: The entry's number when it was written, else None.
        """
        if written:
            self.journal._wrote(self.host)
            self.persisted = self.number
            return self.number
        self.journal._requeue(self.host, self._marks)
        if written is None:
            self.journal.done(self.host, self.number)
        return None


class JournalFile:
    """A journal file read from a host: its owner and entries."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.owner = owner_of(path)
        self.entries: list[dict[str, Any]] = []
        self.done: set[int] = set()
        self.unreadable = 0
        for line in text.splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                self.unreadable += 1  # a line cut by the crash: its change had not started
                continue
            if "done" in item:
                self.done.update(int(n) for n in item["done"])
            elif "n" in item:
                self.entries.append(item)


def pending(journal: JournalFile) -> list[dict[str, Any]]:
    """The entries of ``journal`` not undone yet, newest first (the order to undo them in)."""
    return [entry for entry in reversed(journal.entries) if int(entry["n"]) not in journal.done]
