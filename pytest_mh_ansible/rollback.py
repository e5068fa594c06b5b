"""The rollback journal: every change made through Ansible modules, recorded with its inverse and undone.

Three scopes nest: ``session`` (``pytest_setup``, ``pytest_mh_host_setup`` hooks, session-scoped
fixtures), ``topology`` (``topology_setup``) and ``test``.
Each mutating module call records how to undo itself *before* it reports success; at the end of a
scope the journal replays the scope's undo steps newest first. A failing undo step does not stop
the others: all failures are raised together, each naming the host, the operation and the cause.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, final

from ._private.secrets import secrets
from .errors import RollbackError, TeardownExceptionGroup

if TYPE_CHECKING:
    from .host import MultihostHost

__all__ = ["CallRecord", "JournalEntry", "RollbackJournal"]

log = logging.getLogger("pytest_mh_ansible.rollback")

SCOPES = ("session", "topology", "test")


@final
@dataclass
class JournalEntry:
    """One recorded change and how to undo it."""

    host: str
    operation: str
    undo: Callable[[], None] = field(repr=False)
    reverted: bool = False


@final
@dataclass(frozen=True)
class CallRecord:
    """One call that may have changed a host, as it was made: the data of a playbook export.

    :ivar host: The inventory hostname (several, comma-separated, for a playbook).
    :ivar kind: ``module`` (``host.ansible.run``), ``command`` (``host.conn.run``) or ``playbook``.
    :ivar name: The module's name, the command line, or the playbook's path.
    :ivar args: The module's arguments as given (secrets included: never show them unmasked);
        for a command, ``stdin`` and ``rc``; for a playbook, ``extra_vars``, ``tags``, ``skip_tags``.
    :ivar scope: The journal scope that was open (``session``, ``topology`` or ``test``).
    :ivar reverting: Made by an undo step, while the journal rolled a scope back.
    """

    host: str
    kind: Literal["module", "command", "playbook"]
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    become: bool | None = None
    become_user: str | None = None
    scope: str = "session"
    reverting: bool = False


@dataclass
class _Scope:
    name: str
    entries: list[JournalEntry] = field(default_factory=list)
    keys: dict[str, object] = field(default_factory=dict)  # e.g. paths already snapshotted in this scope
    first_call: int = 0  # where this scope's calls start in RollbackJournal.calls


@final
class RollbackJournal:
    """An undo stack with nested scopes.

    Example::

        journal.open("test")
        journal.record(host, "ansible.builtin.copy dest=/etc/app.conf", undo=restore_app_conf)
        journal.close("test")   # runs restore_app_conf(); raises a TeardownExceptionGroup on failures

    :param record_calls: Also keep every call that may change a host (:class:`CallRecord`), for
        ``--mh-export-playbooks``; the calls of a scope are kept until the scope is closed.
    """

    def __init__(self, *, record_calls: bool = False) -> None:
        self._scopes: list[_Scope] = []
        self._target: str | None = None
        self._replaying = False
        self._internal = 0
        self._undoing: str | None = None  # the scope whose undo steps run
        self.history: list[str] = []
        """What was changed and reverted, one line each, for the test's log."""
        self.record_calls = record_calls
        self.calls: list[CallRecord] = []
        """The calls of the open scopes, oldest first (with ``record_calls``)."""
        self.closed_calls: list[CallRecord] = []
        """The calls of the scope closed last, its undo steps' calls included (with ``record_calls``)."""
        self.unreverted: list[tuple[str, str]] = []
        """(scope, ``[host] not reverted: ...``) of each change that has no inverse, in order (see :meth:`note`)."""
        self.on_close: list[Callable[[str], None]] = []
        """Called with a scope's name after it was undone (the hosts' journals mark their entries done)."""

    @property
    def scope(self) -> str | None:
        return self._scopes[-1].name if self._scopes else None

    @property
    def replaying(self) -> bool:
        """True while undo steps run: their own module calls are not recorded again."""
        return self._replaying

    def open(self, name: str) -> None:
        """Start scope ``name`` (session, topology or test) inside the current one."""
        if name not in SCOPES:
            raise ValueError(f"unknown rollback scope {name!r}")
        self._scopes.append(_Scope(name, first_call=len(self.calls)))

    @contextmanager
    def into(self, name: str) -> Iterator[None]:
        """Record into the (outermost) open scope ``name`` while the block runs, whatever is open inside it.

        A session-scoped fixture may first run while a topology (or a test) scope is open; its
        changes belong to the session and are undone once, at its end::

            with journal.into("session"):
                host.ansible.run("ansible.builtin.copy", dest="/etc/app.conf", content="x")
        """
        if name not in SCOPES:
            raise ValueError(f"unknown rollback scope {name!r}")
        previous, self._target = self._target, name
        try:
            yield
        finally:
            self._target = previous

    def _current(self) -> _Scope:
        """The scope that records go to: the innermost, or the one :meth:`into` names."""
        if not self._scopes:
            self.open("session")
        if self._target is not None:
            for scope in self._scopes:
                if scope.name == self._target:
                    return scope
        return self._scopes[-1]

    def record(self, host: MultihostHost | str, operation: str, undo: Callable[[], None]) -> None:
        """Remember how to undo ``operation`` on ``host`` in the innermost scope (see :meth:`into`)."""
        scope = self._current()
        name = host if isinstance(host, str) else host.name
        masked = secrets.mask(operation)
        scope.entries.append(JournalEntry(name, masked, undo))
        self.history.append(f"[{name}] changed: {masked}")
        log.info("[%s] changed: %s (undo recorded in %s scope)", name, masked, scope.name)

    @contextmanager
    def internal(self) -> Iterator[None]:
        """Commands run inside this block are the journal's own probes, not changes: they are not recorded."""
        self._internal += 1
        try:
            yield
        finally:
            self._internal -= 1

    def log_call(
        self,
        host: str,
        kind: Literal["module", "command", "playbook"],
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        become: bool | None = None,
        become_user: str | None = None,
    ) -> None:
        """Keep a call that may have changed ``host`` (only with ``record_calls``; commands of probes are left out)."""
        if not self.record_calls or (kind == "command" and self._internal):
            return
        scope = self._undoing or self._current().name
        self.calls.append(CallRecord(host, kind, name, dict(args or {}), become, become_user, scope, self._replaying))

    def scope_calls(self, name: str) -> list[CallRecord]:
        """The calls made while scope ``name`` was the innermost open one, oldest first (not its undo steps)."""
        return [call for call in self.calls if call.scope == name and not call.reverting]

    def note(self, host: MultihostHost | str, message: str) -> None:
        """Log a change that could not be recorded (``not reverted``), so that it is never silent.

        It is also kept in :attr:`unreverted`: the plugin lists it in the terminal summary, or fails
        the test with it (ini ``mh_unreverted = fail``).
        """
        name = host if isinstance(host, str) else host.name
        masked = secrets.mask(message)
        line = f"[{name}] {masked}"
        self.history.append(line)
        self.unreverted.append((self._current().name, line))
        log.warning("[%s] %s", name, masked)

    def unchanged(self, host: MultihostHost | str, operation: str, why: str) -> None:
        """A change whose undo is nothing of its own (an earlier snapshot of the scope covers it, or the
        host is in its recorded state again): said as such, never as "reverted"."""
        name = host if isinstance(host, str) else host.name
        masked = secrets.mask(operation)
        self.history.append(f"[{name}] changed: {masked} (nothing to undo of its own: {why})")
        log.info("[%s] changed: %s (nothing to undo of its own: %s)", name, masked, why)

    def remember(self, key: str, value: object) -> None:
        """Keep a value for the innermost scope (such as a path's snapshot), found again by :meth:`recall`."""
        self._current().keys[key] = value

    def recall(self, key: str) -> object | None:
        """A value remembered in the innermost scope (see :meth:`into`), or None."""
        return self._current().keys.get(key) if self._scopes else None

    def entries(self, scope: str | None = None) -> list[JournalEntry]:
        """The entries of ``scope`` (the innermost when None), oldest first."""
        for candidate in reversed(self._scopes):
            if scope is None or candidate.name == scope:
                return list(candidate.entries)
        return []

    def pending(self) -> list[str]:
        """``[host] operation`` of every recorded change not reverted yet, newest first (all open scopes).

        What a run that ends now (a second SIGTERM) leaves on the hosts.
        """
        return [
            f"[{entry.host}] {entry.operation}"
            for scope in reversed(self._scopes)
            for entry in reversed(scope.entries)
            if not entry.reverted
        ]

    @contextmanager
    def replay(self) -> Iterator[None]:
        """Module calls made inside the block undo something (a dead session's changes): not recorded."""
        with self._replay():
            yield

    @contextmanager
    def _replay(self) -> Iterator[None]:
        self._replaying, previous = True, self._replaying
        try:
            yield
        finally:
            self._replaying = previous

    def close(self, name: str) -> None:
        """End scope ``name``: undo its changes newest first; raise every failure together.

        Closing a scope that is not open does nothing, so teardown code can call it safely twice.
        Scopes opened inside it (left open by an interrupted run) are closed first.
        """
        if not any(scope.name == name for scope in self._scopes):
            return
        try:
            self._close(name)
        finally:
            for listener in self.on_close:
                listener(name)

    def _close(self, name: str) -> None:
        errors: list[Exception] = []
        while self._scopes:
            scope = self._scopes[-1]  # left on the stack while it is undone: pending() still lists it
            self._undoing = scope.name  # the undo steps' own calls belong to the scope they revert
            try:
                errors.extend(self._undo(scope))
            finally:
                self._undoing = None
            self._scopes.pop()
            # The scope's calls (its undo steps' included) leave with it; a call recorded into an
            # outer scope meanwhile (journal.into) stays.
            later = self.calls[scope.first_call :]
            self.calls[scope.first_call :] = [call for call in later if call.scope != scope.name]
            if scope.name == name:
                self.closed_calls = [call for call in later if call.scope == scope.name]
                break
        if errors:
            raise TeardownExceptionGroup(f"rollback of the {name} scope: {len(errors)} step(s) failed", errors)

    def _undo(self, scope: _Scope) -> list[Exception]:
        errors: list[Exception] = []
        with self._replay():
            for entry in reversed(scope.entries):
                if entry.reverted:
                    continue
                try:
                    entry.undo()
                except Exception as err:
                    message = secrets.mask(f"{type(err).__name__}: {err}")
                    failure = RollbackError(entry.host, entry.operation, message)
                    failure.__cause__ = err
                    errors.append(failure)
                    self.history.append(f"[{entry.host}] NOT reverted: {entry.operation}: {message}")
                    log.error("[%s] could not revert %s: %s", entry.host, entry.operation, message)
                else:
                    entry.reverted = True
                    self.history.append(f"[{entry.host}] reverted: {entry.operation}")
                    log.info("[%s] reverted: %s", entry.host, entry.operation)
        return errors

    def close_all(self) -> list[Exception]:
        """End every open scope (end of session); return the failures instead of raising them."""
        errors: list[Exception] = []
        while self._scopes:
            try:
                self.close(self._scopes[-1].name)
            except TeardownExceptionGroup as group:
                errors.extend(group.exceptions)
        return errors
