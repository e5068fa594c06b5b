"""How each module's change is undone: the before-state taken before a call, the inverse recorded after.

Path modules (copy, file, lineinfile, blockinfile, ini_file, template) and any call with
``revert_paths`` snapshot their paths on the target with ``mh_ansible.rollback.snapshot`` and undo
with ``mh_ansible.rollback.restore``. ``mh_ansible.rollback.write`` takes that snapshot itself, in
the same module call as the change: the recorder only names it (:meth:`JournalRecorder.arguments`).
Users, groups, services and packages read their before-state with plain commands (a few
milliseconds) and undo with the matching module. A user or group that the call created is
deleted with ``userdel`` / ``groupdel``, the commands the modules run, in one command (3-15 ms
instead of a 40-50 ms module call); "created" is decided from ``getent``'s answer that there was
no such entry, never from a probe that failed, and what was there beside the account is kept
(see :mod:`.accounts`); a service that only has to run again (or
stop again) gets ``systemctl start|stop`` (``service NAME start|stop`` without systemd); packages
that the call installed on a dpkg system are purged with ``apt-get`` (as the apt module runs it,
without its 0.6-1 s load of apt's cache). Where those commands are missing or fail, the module
does it and reports why.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import RollbackError
from ...rollback import RollbackJournal
from ..secrets import secrets
from . import accounts, snapshots
from .host_journal import PROBE_OUTPUT, RUN_ID, HostJournal, ProbedEntry, ScriptedEntry
from .service_state import service_state
from .snapshots import SNAPSHOT_DIR

if TYPE_CHECKING:
    from ...host import MultihostHost
    from ...modules import ModuleResult
    from ..ansible.executor import BeforeCommand

__all__ = ["SNAPSHOT_DIR", "JournalRecorder", "short_name"]

log = logging.getLogger("pytest_mh_ansible.rollback")

PATH_MODULES = {
    "copy": ("dest",),
    "template": ("dest",),
    "file": ("path", "dest", "name"),
    "lineinfile": ("path", "dest", "destfile", "name"),
    "blockinfile": ("path", "dest", "destfile", "name"),
    "ini_file": ("path", "dest"),
}
# Modules that create missing parent directories: their snapshot starts at the topmost missing one.
_CREATE_PARENTS = {"file", "lineinfile", "blockinfile", "ini_file"}
# Modules of this project's collection that snapshot their own path when given a snapshot name.
SELF_SNAPSHOTTING = {"mh_ansible.rollback.write": "dest"}
# Modules that only read: left out of the calls kept for a playbook export.
_READ_ONLY_MODULES = {
    "ansible.builtin.setup",
    "ansible.builtin.gather_facts",
    "ansible.builtin.stat",
    "ansible.builtin.slurp",
    "ansible.builtin.find",
    "ansible.builtin.package_facts",
    "ansible.builtin.service_facts",
    "mh_ansible.rollback.host_state",
}
_counter = itertools.count(1)


def _state_arg(args: Mapping[str, Any]) -> dict[str, Any]:
    """The one argument of a user or group call that its undo reads (never a password the test gave)."""
    return {"state": str(args.get("state", "present"))}


def short_name(module: str) -> str:
    """``ansible.builtin.copy`` → ``copy``; ``community.general.ini_file`` → ``ini_file``."""
    return module.rsplit(".", 1)[-1]


def describe(module: str, args: Mapping[str, Any]) -> str:
    """``ansible.builtin.copy dest=/etc/app.conf``: the module and its identifying arguments."""
    keys = ("name", "path", "dest", "pkg", "state")
    shown = " ".join(f"{key}={args[key]}" for key in keys if key in args and not isinstance(args[key], dict))
    return f"{module} {shown}".strip()


@dataclass
class _Token:
    host: MultihostHost
    module: str
    args: Mapping[str, Any]
    snapshot: str | None = None
    paths: list[str] = field(default_factory=list)
    before: dict[str, Any] = field(default_factory=dict)
    arguments: dict[str, Any] = field(default_factory=dict)  # added to the module call (a snapshot to take)
    undo: Callable[[ModuleResult | None], Callable[[], None] | None] | None = None
    unreverted: str | None = None  # what part of the change no inverse covers (set by the undo factory)
    silent_change: Callable[[], bool] | None = None  # whether an unchanged call changed the host all the same
    recipe: list[dict[str, Any]] | None = None  # the undo as data, kept on the host for a later session
    persisted: int | None = None  # its entry in the host's journal (host_journal.py)
    probe: _DeferredProbe | None = None  # the probe (with its entry) that decides the undo, if still to run


class JournalRecorder:
    """The :class:`~pytest_mh_ansible.modules.ChangeRecorder` that feeds the rollback journal."""

    def __init__(self, journal: RollbackJournal, *, persist: HostJournal | None = None) -> None:
        self.journal = journal
        self.persist = persist
        """Where each change's undo is also written on its host before the change (crash recovery)."""

    # -- the ChangeRecorder protocol ----------------------------------------------------------
    def prepare(
        self, host: MultihostHost, module: str, args: Mapping[str, Any], *, revert_paths: Sequence[str] | None
    ) -> object:
        token, before = self.prepare_deferred(host, module, args, revert_paths=revert_paths)
        if before is not None:
            before.run_apart()
        return token

    def prepare_deferred(
        self, host: MultihostHost, module: str, args: Mapping[str, Any], *, revert_paths: Sequence[str] | None
    ) -> tuple[object, BeforeCommand | None]:
        """:meth:`prepare`, with the command that reads an account's before-state left to the caller.

        A user or group change's undo is decided from a probe of the account, run by the same
        command that writes the journal's entry. Here that command is returned (None if the call
        needs none) for the caller to run right before the module: the warm executor carries it
        with the module call, any other runs it apart (:class:`~..ansible.executor.BeforeCommand`).
        The undo is decided when its output comes, exactly as :meth:`prepare` decides it.
        """
        if self.journal.replaying:
            return None, None  # undo steps are not recorded again
        if module in SELF_SNAPSHOTTING:
            token = _Token(host, module, dict(args))
            path = args.get(SELF_SNAPSHOTTING[module])
            if path and "snapshot" not in args:
                self._snapshot(token, [str(path)], inline=True)
        elif module.startswith("mh_ansible.rollback."):
            return None, None  # the journal's own bookkeeping is not recorded
        else:
            with self.journal.internal():  # the probes below read the before-state: not changes to export
                token = self._prepare(host, module, args, revert_paths)
        self._persist(token)  # nothing yet for an account whose probe is still to run: written with it
        return token, token.probe

    def _persist(self, token: _Token) -> None:
        """Write the change's undo on its host before the change, so that a later session can replay it."""
        if self.persist is None or (token.recipe is None and token.undo is None and token.unreverted is None):
            return  # nothing this call can change that the journal knows of
        if token.persisted is not None:
            return  # written already, in the same command as the probe of the before-state
        if token.recipe is None and token.undo is not None and token.snapshot is None:
            return  # covered by an earlier snapshot of this scope: that entry restores it
        steps = token.recipe or []
        with self.journal.internal():
            token.persisted = self.persist.begin(
                token.host, describe(token.module, token.args), steps, why=token.unreverted
            )

    def _prepare(
        self, host: MultihostHost, module: str, args: Mapping[str, Any], revert_paths: Sequence[str] | None
    ) -> _Token:
        token = _Token(host, module, dict(args))
        name = short_name(module)
        paths = list(revert_paths or [])
        if name in PATH_MODULES and not revert_paths:
            path = next((args[key] for key in PATH_MODULES[name] if args.get(key)), None)
            if path:
                paths = [str(path)]
        if paths:
            parents = name in _CREATE_PARENTS and not revert_paths
            self._snapshot(token, paths, missing_parents=parents, with_entry=True)
        elif name == "user":
            self._before_user(token)
        elif name == "group":
            self._before_group(token)
        elif name in ("service", "systemd", "systemd_service", "sysvinit"):
            self._before_service(token)
        elif name in ("package", "apt", "dnf", "yum"):
            self._before_packages(token)
        elif name == "sysctl":
            self._before_sysctl(token)
        return token

    def arguments(self, token: object) -> Mapping[str, Any]:
        """Arguments for the module call itself: the snapshot a self-snapshotting module takes."""
        return token.arguments if isinstance(token, _Token) else {}

    def commit(self, token: object, result: ModuleResult) -> None:
        failed = bool(result.raw.get("mh_failed"))
        if failed and isinstance(token, _Token) and token.module in SELF_SNAPSHOTTING:
            self.abort(token)  # the collection's own modules change nothing when they fail
            return
        if isinstance(token, _Token) and token.arguments and not result.raw.get("snapshot"):
            token.snapshot = None  # the module dropped its snapshot itself (nothing changed)
        if isinstance(token, _Token) and not result.changed and token.silent_change is not None:
            with self.journal.internal():
                silently = token.silent_change()
            if silently:
                result = dataclasses.replace(result, changed=True)
        if not isinstance(token, _Token) or not result.changed:
            self.abort(token)
            return
        operation = describe(token.module, token.args)
        if result.raw.get("mh_interrupted"):
            operation += " (interrupted in flight)"
        if failed:
            operation += " (failed: undone in case it changed the host before it failed)"
        undo = token.undo(result) if token.undo is not None else None
        if token.unreverted is not None:
            self.journal.note(token.host, f"not reverted: {operation}: {token.unreverted}")
        if undo is None:
            if token.unreverted is None:
                what = "may have changed the host" if failed else "changed the host"
                self.journal.note(
                    token.host,
                    f"not reverted: {operation} {what} and has no known inverse "
                    "(name revert_paths=[...] to snapshot what it changes)",
                )
            self._settled(token)  # reported: a later session could not undo it either
            return
        if isinstance(undo, _Nothing):
            self.journal.unchanged(token.host, operation, undo.why)
            self._settled(token)
            return
        self.journal.record(token.host, operation, self._marked(token, undo))

    def _marked(self, token: _Token, undo: Callable[[], None]) -> Callable[[], None]:
        """``undo``, then its entry in the host's journal marked done (when it has one)."""
        if token.persisted is None or self.persist is None:
            return undo
        persist, host, number = self.persist, token.host, token.persisted

        def undo_and_mark() -> None:
            if isinstance(undo, accounts.CommandUndo):  # the mark goes in the undo's own command
                command, numbers = persist.carry(host, number)
                if undo.carrying(command):
                    persist.carried(host, numbers)
                    return
            elif isinstance(undo, snapshots.Restore):  # the mark goes with the agent's restore script
                lines, numbers = persist.carry_script(host, number)
                if undo.carrying(lines):
                    persist.carried(host, numbers)
                    return
            else:
                undo()
            persist.done(host, number)

        return undo_and_mark

    def protect_paths(self, host: MultihostHost, paths: Sequence[str]) -> Callable[[bool, str], None]:
        """Snapshot ``paths`` before an operation the journal cannot see into (a playbook).

        :returns: A function to call after the operation: ``finish(changed, operation)`` records
            the restore when something changed, and drops the snapshot otherwise.
        """
        token = _Token(host, "paths", {"path": ", ".join(paths)})
        self._snapshot(token, list(paths), with_entry=True)
        self._persist(token)

        def finish(changed: bool, operation: str) -> None:
            if changed and token.undo is not None:
                undo = token.undo(None)
                if isinstance(undo, _Nothing):
                    self.journal.unchanged(host, operation, undo.why)
                    self._settled(token)
                    return
                if undo is not None:
                    self.journal.record(host, operation, self._marked(token, undo))
                    return
            self.abort(token)

        return finish

    def abort(self, token: object) -> None:
        """The call failed or changed nothing: drop a snapshot taken for it."""
        if isinstance(token, _Token) and token.snapshot is not None:
            with self.journal.internal():
                token.host.conn.run(f"rm -rf {shlex.quote(f'{SNAPSHOT_DIR}/{token.snapshot}')}", raise_on_error=False)
        self._settled(token)

    def _settled(self, token: object) -> None:
        """Nothing of the call is left to undo: its entry in the host's journal is marked done."""
        if isinstance(token, _Token) and token.persisted is not None and self.persist is not None:
            self.persist.done(token.host, token.persisted)
            token.persisted = None

    def called(
        self, host: MultihostHost, module: str, args: Mapping[str, Any], *, become: bool | None, become_user: str | None
    ) -> None:
        if module not in _READ_ONLY_MODULES:
            self.journal.log_call(host.name, "module", module, args, become=become, become_user=become_user)

    # -- paths --------------------------------------------------------------------------------
    def _snapshot(
        self,
        token: _Token,
        paths: list[str],
        *,
        inline: bool = False,
        missing_parents: bool = False,
        with_entry: bool = False,
    ) -> None:
        """Snapshot ``paths`` not yet covered in this scope; ``inline``: the module call takes it itself;
        ``missing_parents``: the module creates missing parents, so the snapshot starts at the topmost one;
        ``with_entry``: its restore is the whole undo, so the agent's script that takes the snapshot
        also writes the change's entry in the host's journal (as :meth:`_persist` would, one round trip fewer)."""
        host = token.host
        fresh = [p for p in paths if self.journal.recall(f"path:{host.name}:{p}") is None]
        if not fresh:
            token.undo = lambda result: _COVERED  # a snapshot of this scope covers these paths already
            return
        name = f"mh-{RUN_ID}-{next(_counter)}"  # unique across sessions and machines
        recipe: list[dict[str, Any]] = [{"do": "restore", "snapshot": name}]
        if inline:
            token.arguments = {"snapshot": name, "backup_dir": SNAPSHOT_DIR}
        else:
            entry = self._scripted_entry(token, recipe) if with_entry else None
            fresh = snapshots.take(host, fresh, name, missing_parents=missing_parents, entry=entry)
            if entry is not None:
                token.persisted = entry.persisted  # None: not written by the script, _persist writes it
        token.snapshot = name
        token.paths = fresh
        token.recipe = recipe

        def undo(result: ModuleResult | None) -> Callable[[], None]:
            for path in fresh:
                self.journal.remember(f"path:{host.name}:{path}", name)
            token.snapshot = None  # kept: the journal restores (and removes) it
            return snapshots.Restore(host, name)

        token.undo = undo

    def _scripted_entry(self, token: _Token, recipe: list[dict[str, Any]]) -> ScriptedEntry | None:
        """The entry :meth:`_persist` would write for a snapshot's restore, for the snapshot's script to write."""
        if self.persist is None or token.persisted is not None or token.unreverted is not None:
            return None
        return self.persist.scripted(token.host, describe(token.module, token.args), recipe)

    # -- users and groups -------------------------------------------------------------------
    def _before_user(self, token: _Token) -> None:
        name = str(token.args.get("name", ""))
        if not name:
            return
        home = str(token.args["home"]) if token.args.get("home") else None

        def decide(output: str) -> None:
            state = accounts.user_state(name, output, home=home)
            if state.shadow is not None:
                secrets.add(state.shadow[1])  # a password hash: never in a log line of the undo or the journal
            snapshot, at_commit = self._account_snapshot(token)
            undo, why = accounts.user_inverse(token.host, state, token.args, snapshot=snapshot)
            self._account_undo(token, undo, why, at_commit)
            if undo is not None and token.snapshot is None and token.persisted is None:  # the user step
                token.recipe = [{"do": "user", "state": dataclasses.asdict(state), "args": _state_arg(token.args)}]

        probe = accounts.user_probe(name, home=home)
        self._probe(token, ("user", name), probe, {"name": name, "home_arg": home}, decide)

    def _before_group(self, token: _Token) -> None:
        name = str(token.args.get("name", ""))
        if not name:
            return

        def decide(output: str) -> None:
            snapshot, at_commit = self._account_snapshot(token)
            state = accounts.group_state(name, output)
            undo, why = accounts.group_inverse(token.host, state, token.args, snapshot=snapshot)
            self._account_undo(token, undo, why, at_commit)
            if undo is not None and token.snapshot is None and token.persisted is None:
                token.recipe = [{"do": "group", "state": dataclasses.asdict(state), "args": _state_arg(token.args)}]

        self._probe(token, ("group", name), accounts.group_probe(name), {"name": name}, decide)

    def _probe(
        self,
        token: _Token,
        account: tuple[str, str],
        probe: str,
        state: Mapping[str, Any],
        decide: Callable[[str], None],
    ) -> None:
        """An account's probe, whose output ``decide`` makes the undo of; with a host journal, the entry
        is written in the same command, which is left in ``token.probe`` to run right before the module.

        The entry keeps the probe's output, from which a later session decides the undo as this one
        does (one command before the change instead of two, carried with the module call by the warm
        executor). Not for a deletion (``state=absent``), whose undo may be a snapshot taken after the
        probe: its entry is written once that is known. If the entry cannot be written with the probe,
        the entry that :meth:`_persist` writes then says why; if the undo turns out impossible,
        :meth:`_account_undo` replaces the entry by one that says why.
        """
        if self.persist is None or _state_arg(token.args)["state"] == "absent":
            decide(token.host.conn.run(probe, raise_on_error=False).stdout)
            return
        kind, _ = account
        step = {"do": kind, "state": {**state, "probe": PROBE_OUTPUT}, "args": _state_arg(token.args)}
        entry = self.persist.probed(token.host, describe(token.module, token.args), probe, [step])

        def settle(number: int | None, output: str) -> None:
            with self.journal.internal():
                token.persisted = number
                decide(output)
            self._persist(token)  # the entry, if the probe's command could not write it (or why it cannot)

        def lost(why: str) -> None:
            self._probe_lost(token, account, entry, why)

        token.probe = _DeferredProbe(entry, settle, lost, self.journal.internal)

    def _probe_lost(self, token: _Token, account: tuple[str, str], entry: ProbedEntry, why: str) -> None:
        """The probe went with the module call and its answer did not come back: the undo is not known.

        Nothing is deleted on a guess: the change is reported as not reverted, and its entry, if the
        host wrote it, is marked done, so that no later session acts on it either.
        """
        kind, name = account
        token.unreverted = f"the state of {kind} {name!r} before the call was not read back ({why}): not revertible"
        token.undo = None
        entry.unknown()
        if self.persist is not None:
            self.persist.done(token.host, entry.number)

    def _account_snapshot(
        self, token: _Token
    ) -> tuple[Callable[[list[str]], Callable[[], None]], list[Callable[[ModuleResult | None], None]]]:
        """A snapshot an account's inverse may take (of the account files, a home): ``(take, at_commit)``.

        ``take(paths)`` snapshots now and gives the undo that restores them; the snapshot is named to
        the journal when the call is committed (the hooks in ``at_commit``), or dropped if it fails.
        """
        restores: list[Callable[[], None]] = []
        at_commit: list[Callable[[ModuleResult | None], None]] = []

        def take(paths: list[str]) -> Callable[[], None]:
            self._snapshot(token, paths)
            factory = token.undo

            def named(result: ModuleResult | None) -> None:
                step = factory(result) if factory is not None else None
                if step is not None and not isinstance(step, _Nothing):
                    restores.append(step)

            def restore_paths() -> None:
                for restore in restores:
                    restore()

            at_commit.append(named)
            return restore_paths

        return take, at_commit

    def _account_undo(
        self,
        token: _Token,
        undo: Callable[[], None] | None,
        why: str | None,
        at_commit: Sequence[Callable[[ModuleResult | None], None]] = (),
    ) -> None:
        """An account's undo, or why it has none: then the change is reported and nothing is deleted."""
        token.unreverted = why
        if undo is None:
            token.undo = None
            if token.persisted is not None and self.persist is not None:
                # Written with the probe, the entry would have a later session try an undo that this
                # one refuses: it is marked done, and the entry that says why goes in its place.
                self.persist.done(token.host, token.persisted)
                token.persisted = None
            return

        def committed(result: ModuleResult | None) -> Callable[[], None]:
            for hook in at_commit:
                hook(result)
            return undo

        token.undo = committed

    # -- services -----------------------------------------------------------------------------
    def _before_service(self, token: _Token) -> None:
        host, name = token.host, str(token.args.get("name", ""))
        if not name:
            return
        active_state, enabled_state = service_state(host, name)
        if not active_state:
            # Never guessed: a restart's undo would stop a service that was running.
            token.unreverted = f"the state of service {name!r} could not be read before the call: not revertible"
            return
        if "enabled" in token.args and enabled_state not in ("enabled", "disabled", "none"):
            why = "could not be read" if not enabled_state else f"was {enabled_state!r}"
            token.unreverted = (
                f"whether service {name!r} starts at boot {why} before the call: only 'enabled' or 'disabled' "
                "is put back, so that part is not reverted"
            )
        if active_state == "failed" and token.args.get("state") in ("started", "restarted", "reloaded"):
            token.unreverted = f"service {name!r} was failed before the call: the undo stops it (no failure is made up)"
        module = (
            "ansible.builtin.systemd"
            if short_name(token.module) in ("systemd", "systemd_service")
            else ("ansible.builtin.service")
        )
        args = {key: token.args[key] for key in ("state", "enabled", "masked") if key in token.args}
        was, plain = [active_state, enabled_state], set(token.args) <= {"name", "state"}
        token.recipe = [{"do": "service", "name": name, "module": module, "args": args, "was": was, "plain": plain}]
        token.undo = lambda result: service_undo(host, name=name, module=module, args=args, was=was, plain=plain)

    # -- kernel settings ----------------------------------------------------------------------
    def _before_sysctl(self, token: _Token) -> None:
        """``sysctl``: its file snapshotted, the key's running value read (a missing key: nothing to set back)."""
        host, key = token.host, str(token.args.get("name", ""))
        if not key:
            return
        path = "/proc/sys/" + key.replace(".", "/")
        out = host.conn.run(
            f'p={shlex.quote(path)}; if [ -e "$p" ]; then cat "$p" || exit 3; else echo :absent:; fi',
            raise_on_error=False,
        )
        if out.rc != 0:
            token.unreverted = f"sysctl {key!r} could not be read before the call (exit {out.rc}): not revertible"
            return
        old = None if out.stdout.strip() == ":absent:" else " ".join(out.stdout.split())
        self._snapshot(token, [str(token.args.get("sysctl_file") or "/etc/sysctl.conf")])
        file_undo = token.undo
        token.recipe = [{"do": "sysctl", "key": key, "old": old}]
        if token.snapshot is not None:
            token.recipe.insert(0, {"do": "restore", "snapshot": token.snapshot})

        def undo(result: ModuleResult | None) -> Callable[[], None]:
            restore_file = file_undo(result) if file_undo is not None else None

            def revert() -> None:
                if restore_file is not None:
                    restore_file()
                sysctl_undo(host, key, old)

            return revert

        token.undo = undo

    # -- packages -----------------------------------------------------------------------------
    def _before_packages(self, token: _Token) -> None:
        host = token.host
        names = token.args.get("name", token.args.get("pkg"))
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        if not names:
            return
        wanted = [str(n) for n in names]
        query = " ".join(shlex.quote(n) for n in wanted)
        # dpkg: every installed package (the change's own and what apt adds or removes along with it),
        # the held ones marked, and apt's marks file's checksum; rpm: whether each named package is installed.
        out = host.conn.run(
            f"if command -v dpkg-query >/dev/null; then echo :dpkg:; {_DPKG_INSTALLED} || exit 3; "
            f"md5sum {_APT_STATES} 2>/dev/null | cut -c1-32 | sed 's/^/states:/'; "
            f'else for p in {query}; do rpm -q "$p" >/dev/null 2>&1 && echo "$p"; done; fi',
            raise_on_error=False,
        )
        words = out.stdout.split()
        dpkg = ":dpkg:" in words
        if out.rc != 0 or (dpkg and not any(w.startswith(_INSTALLED) for w in words)):
            # Never guessed: an empty "before" would make the undo purge every package of the host.
            token.unreverted = (
                f"the installed packages could not be read before the call (exit {out.rc}): not revertible"
            )
            return
        before, held = _installed(words)
        states_sum = next((w.removeprefix("states:") for w in words if w.startswith("states:")), "")
        states_undo = None
        if dpkg:
            # apt's marks (auto-installed or not): the module may change them without a package change
            # (apt-mark manual of a package it was asked for): snapshotted, put back byte for byte.
            self._snapshot(token, [_APT_STATES])
            states_undo = token.undo
            token.silent_change = lambda: _states_sum(host) != states_sum
        state = str(token.args.get("state", "present"))
        upgraded = [n for n in wanted if n in before] if state == "latest" else []
        if upgraded:
            # An upgrade of what was installed: the old versions are not kept, so it cannot be undone.
            token.unreverted = f"state=latest may have upgraded {', '.join(upgraded)} (a downgrade is not attempted)"

        data = {"before": sorted(before), "held": sorted(held), "dpkg": dpkg, "wanted": wanted, "state": state}
        token.recipe = [{"do": "packages", **data}]
        if dpkg and token.snapshot is not None:
            token.recipe.append({"do": "restore", "snapshot": token.snapshot})

        def undo(result: ModuleResult | None) -> Callable[[], None] | None:
            marks = None
            if states_undo is not None:
                if _states_sum(host) != states_sum:
                    marks = states_undo(result)
                else:
                    self.abort(token)  # apt's marks are as they were: the snapshot goes
            steps = package_steps(host, before=before, held=held, dpkg=dpkg, wanted=wanted, state=state)
            if marks is not None and not isinstance(marks, _Nothing):
                steps.append(marks)
            if not steps:
                return None if token.unreverted is not None else _SAME_STATE

            def run_steps() -> None:
                for step in steps:
                    step()

            return run_steps

        token.undo = undo


def sysctl_undo(host: MultihostHost, key: str, old: str | None) -> None:
    """Set sysctl ``key`` back to ``old`` (its running value before; None: it did not exist) if it differs."""
    if old is None:
        return
    path = "/proc/sys/" + key.replace(".", "/")
    now = host.conn.run(f"cat {shlex.quote(path)}", raise_on_error=False).stdout
    if " ".join(now.split()) != old:
        host.conn.run(f"{_SBIN_PATH}sysctl -q -w {shlex.quote(f'{key}={old}')}")


def package_steps(
    host: MultihostHost, *, before: Iterable[str], held: Iterable[str], dpkg: bool, wanted: Sequence[str], state: str
) -> list[Callable[[], None]]:
    """What puts a host's packages back as ``before`` (``held``: those on hold), as the host is now.

    dpkg: what is installed now and was not is purged, what was and is not is installed again (and held
    again); packages that were there before are left alone (no autoremove: it would also take orphans
    the test did not make). rpm: only the ``wanted`` packages of the call, by its ``state``.

    :raises RollbackError: The installed packages cannot be read now.
    """
    before = set(before)
    if dpkg:
        now = host.conn.run(f"{_DPKG_INSTALLED} || exit 3", raise_on_error=False)
        if now.rc != 0:
            raise RollbackError(host.name, f"packages {', '.join(wanted)}", "dpkg-query failed")
        after, _ = _installed(now.stdout.split())
        new, gone = sorted(after - before), sorted(before - after)
    else:
        new = [n for n in wanted if n not in before] if state in ("present", "installed", "latest") else []
        gone = [n for n in wanted if n in before] if state in ("absent", "removed") else []
    steps: list[Callable[[], None]] = []
    if new and dpkg:
        steps.append(lambda: _purge(host, new))
    elif new:
        steps.append(lambda: _ok(host.ansible.run("ansible.builtin.package", name=new, state="absent")))
    if gone:
        steps.append(lambda: _ok(host.ansible.run("ansible.builtin.package", name=gone, state="present")))
    rehold = sorted(set(held) & set(gone))
    if rehold:
        steps.append(lambda: _hold(host, "".join(f"{name} hold\\n" for name in rehold)))
    return steps


# The account and service commands live in sbin, which a non-root login's PATH may lack (one definition).
_SBIN_PATH = accounts.SBIN_PATH
# Installed packages, one a line; held ones (dpkg selection "hold") as "hold:NAME".
_DPKG_INSTALLED = (
    "q=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\\n') && "
    "printf '%s\\n' \"$q\" | sed -n -e 's/^ii *//p' -e 's/^hi */hold:/p'"
)
_INSTALLED = ("hold:", *"abcdefghijklmnopqrstuvwxyz0123456789")  # how a package line starts


def _installed(words: Sequence[str]) -> tuple[set[str], set[str]]:
    """The installed and the held packages among the words of a :data:`_DPKG_INSTALLED` listing."""
    names = {w.removeprefix("hold:") for w in words if w != ":dpkg:" and not w.startswith("states:")}
    return names, {w.removeprefix("hold:") for w in words if w.startswith("hold:")}


def _states_sum(host: MultihostHost) -> str:
    """The checksum of apt's marks file ('' when it has none)."""
    out = host.conn.run(f"md5sum {_APT_STATES} 2>/dev/null | cut -c1-32", raise_on_error=False)
    return out.stdout.strip()


def _hold(host: MultihostHost, selections: str) -> None:
    """Hold the packages again that were held before a test removed them (dpkg selections)."""
    host.conn.run(f"{_SBIN_PATH}printf {shlex.quote(selections)} | dpkg --set-selections")


# What a test installed is purged by dpkg itself: apt-get's resolver and cache (about a second a call
# on a lab host, where dpkg takes 0.15 s) add nothing when the packages to go are known. apt-get, as the
# apt module runs it to remove packages (its environment and dpkg options), when dpkg refuses.
_ENV = "DEBIAN_FRONTEND=noninteractive DEBIAN_PRIORITY=critical LANG=C LC_ALL=C "
_DPKG_PURGE = _ENV + "dpkg --purge"
_APT_PURGE = _ENV + "apt-get -q -y -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold --purge remove"
# apt's record of the packages it installed as dependencies ("Auto-Installed: 1"), a stanza each.
_APT_STATES = "/var/lib/apt/extended_states"


def _forget_auto_marks(names: Sequence[str], states_file: str = _APT_STATES) -> str:
    """A command that drops the stanzas of ``names`` from apt's states, as apt-get does when it purges them.

    Only when the file has one: otherwise the file is left as it was, time stamps included.
    """
    marks = " ".join(f"-e {shlex.quote(f'Package: {name}')}" for name in names)
    ranges = " ".join(f"-e {shlex.quote(f'/^Package: {_bre(name)}$/,/^$/d')}" for name in names)
    states = shlex.quote(states_file)
    return f"if [ -f {states} ] && grep -qxF {marks} {states}; then sed -i {ranges} {states}; fi"


def _bre(text: str) -> str:
    """``text`` as a literal in a sed basic regular expression between slashes."""
    return "".join("\\" + c if c in ".[]*^$\\/" else c for c in text)


def _purge(host: MultihostHost, names: Sequence[str]) -> None:
    """Purge what a test installed: with ``dpkg --purge`` in one run, then apt's auto-installed marks of
    those packages dropped, which leaves dpkg's and apt's state as ``apt-get purge`` would.

    When dpkg refuses (a package another one now needs, an essential one), ``apt-get`` purges them as
    the apt module would (the marks of those dpkg purged before it refused go too); if that fails
    too, the apt module does, and its error is the one the user sees. The executor then hears of the
    change (:meth:`HostModules.packages_changed`): a warm agent that loaded a file of a purged package
    is replaced, as after the module.
    """
    quoted = " ".join(shlex.quote(name) for name in names)
    forget = _forget_auto_marks(names)
    tries = (
        ("dpkg --purge", _DPKG_PURGE, "apt-get purges them"),
        ("apt-get purge", _APT_PURGE, "the apt module purges them"),
    )
    for tool, purge, then in tries:
        done = host.conn.run(f"{_SBIN_PATH}{purge} {quoted} >/dev/null 2>&1 && {forget}", raise_on_error=False)
        if done.rc == 0:
            host.ansible.packages_changed()
            return
        log.info("%s: %s of %s exited %d: %s", host.name, tool, quoted, done.rc, then)
    _ok(host.ansible.run("ansible.builtin.apt", name=list(names), state="absent", purge=True))


def service_undo(
    host: MultihostHost, *, name: str, module: str, args: Mapping[str, Any], was: Sequence[str], plain: bool
) -> Callable[[], None] | None:
    """The undo of a service call with ``args`` (its state, enabled, masked) on a service that ``was``
    ``(active, enabled)`` before; :data:`_SAME_STATE` when the call left nothing to put back.

    :param plain: The call named only the service and its state (then a start or stop is one command).
    """
    active_state, enabled_state = was
    active = active_state in ("active", "activating", "reloading")
    restore: dict[str, Any] = {"name": name}
    state = args.get("state")
    if state in ("started", "stopped") or (state in ("restarted", "reloaded") and not active):
        restore["state"] = "started" if active else "stopped"
    if "enabled" in args and enabled_state in ("enabled", "disabled"):
        restore["enabled"] = enabled_state == "enabled"
    if "masked" in args:
        restore["masked"] = enabled_state == "masked"
    # sysv, no rc.d link before: enabled=false would leave K links, so the links are removed
    unlink = "enabled" in args and enabled_state == "none"
    if len(restore) == 1 and not unlink:
        return _SAME_STATE  # e.g. a restart of a running service: its state is as before

    def revert() -> None:
        # Only running or not to put back: what the module would run, in one command.
        action = "start" if restore.get("state") == "started" else "stop"
        if plain and set(restore) == {"name", "state"} and _service_command(host, name, action):
            return
        if len(restore) > 1:
            _ok(host.ansible.run(module, restore))
        if unlink:
            host.conn.run(f"update-rc.d -f {shlex.quote(name)} remove >/dev/null")

    return revert


def _service_command(host: MultihostHost, name: str, action: str) -> bool:
    """``systemctl start|stop NAME`` (``service NAME start|stop`` without systemd); False if it failed."""
    quoted = shlex.quote(name)
    done = host.conn.run(
        f"{_SBIN_PATH}if [ -d /run/systemd/system ]; then systemctl {action} {quoted}; "
        f"else service {quoted} {action}; fi >/dev/null 2>&1",
        raise_on_error=False,
    )
    return done.rc == 0


class _DeferredProbe:
    """An account's probe with its journal entry, as a :class:`~..ansible.executor.BeforeCommand`.

    Run apart over the host's connection, or carried with the module call; either way what it printed
    goes to ``settle`` (which decides the undo), and an answer that never came to ``lost``.
    """

    def __init__(
        self,
        entry: ProbedEntry,
        settle: Callable[[int | None, str], None],
        lost: Callable[[str], None],
        internal: Callable[[], contextlib.AbstractContextManager[None]],
    ) -> None:
        self.command = entry.command
        self.done = False
        self.error: BaseException | None = None
        self._entry = entry
        self._settle = settle
        self._lost = lost
        self._internal = internal

    def run_apart(self) -> None:
        def run() -> None:
            with self._internal():  # the journal's own command: not a change to export
                out = self._entry.host.conn.run(self.command, raise_on_error=False)
            self._settle(*self._entry.read(out.stdout))

        self._once(run)

    def carried(self, rc: int, stdout: str) -> None:
        self._once(lambda: self._settle(*self._entry.read(stdout)))

    def lost(self, why: str) -> None:
        self._once(lambda: self._lost(why))

    def _once(self, step: Callable[[], None]) -> None:
        if self.done:
            raise RuntimeError(f"{self._entry.host.name}: the probe of journal entry {self._entry.number} ran already")
        self.done = True
        try:
            step()
        except BaseException as err:
            self.error = err
            raise


class _Nothing:
    """An undo that is nothing of its own; the journal says why instead of logging "reverted"."""

    def __init__(self, why: str) -> None:
        self.why = why

    def __call__(self) -> None:
        pass


_COVERED = _Nothing("an earlier snapshot in this scope restores these paths")
_SAME_STATE = _Nothing("the host is in its recorded state")


def _ok(result: ModuleResult) -> None:
    """An undo step's module call: ``host.ansible.run`` raised already if it failed; nothing else to do."""
    del result
