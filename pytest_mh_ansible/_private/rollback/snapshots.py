"""The journal's snapshots of paths: taken and restored by the host's agent when it has one, else by modules.

A snapshot (before a path module changes a file) and its restore (at the end of the scope) are
the journal's bookkeeping, not the test's change: they need the collection's code but no module
around it. Through the ``mh_ansible.rollback.snapshot`` and ``restore`` modules each is a full
module call (~40-50 ms: a task, an AnsiballZ payload built, sent and unpacked, an argument
spec). The host's agent (the one that runs ``host.conn.run`` commands) runs the same code, the
collection's ``module_utils/_fsstate.py`` and ``_snapshots.py``, as a script in a forked child
in a few milliseconds: the same snapshot layout, the same restore plan and steps.

The export of a test's changes (``--mh-export-playbooks``) sees the module call either way: what
the agent did is logged in the journal as the module call that does the same.

The journal's own lines ride along: the script that takes the snapshot before a file change
appends the change's entry to the journal on the host once the snapshot is taken
(:meth:`~.host_journal.HostJournal.scripted`), and the script that restores it appends the entry's
done mark once the restore succeeded (:class:`Restore`, :meth:`~.host_journal.HostJournal.carry_script`):
the same lines, file and modes as the shell command that writes them apart. A file change with its
rollback so costs one round trip before the change (the snapshot with the entry) and one after (the
restore with the mark), not two and two. When the script fails or does not say that it wrote them,
they are written apart as before (:func:`take` settles the entry with
:meth:`~.host_journal.ScriptedEntry.read`; :meth:`Restore.carrying` says whether the mark was written).

Where the host has no agent (the standard executor, a connection without a channel, no
Python), or the script fails for any reason, the module does the work, and its error is the
one the user sees. Both write the same snapshots, so either may restore what the other took.

Example::

    take(host, ["/etc/app.conf"], "mh-7")      # before the change
    restore(host, "mh-7")                     # at the end of the scope; the snapshot is removed
"""

from __future__ import annotations

import functools
import json
import logging
import re
import shlex
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, final

from ...errors import RollbackError
from ..ansible.collection import collections_dir

if TYPE_CHECKING:
    from ...host import MultihostHost
    from .host_journal import ScriptedEntry

__all__ = ["SNAPSHOT_DIR", "Restore", "restore", "take"]

log = logging.getLogger("pytest_mh_ansible.rollback")

SNAPSHOT_DIR = "/var/lib/mh-ansible/snapshots"

_MODULE_UTILS = ("_fsstate.py", "_snapshots.py")

# What the snapshot and restore modules do around the shared code, minus Ansible's module frame:
# the same checks, the same calls, the same snapshot removal; then the journal's lines, if asked
# for and the work succeeded, appended as the journal's shell command does. It prints one JSON line.
_DRIVER = """
import json as _json
import os as _os


def _mh_topmost_missing(path):
    while True:
        parent = _os.path.dirname(path)
        if parent == path or _os.path.exists(parent):
            return path
        path = parent


def _mh_snapshot(req):
    problem = check_name(req["name"])
    if problem:
        return {"error": problem}
    paths = []
    for path in req["paths"]:
        if not _os.path.isabs(path):
            return {"error": "path %r is not absolute" % path}
        paths.append(_os.path.normpath(path))
    if req.get("missing_parents"):
        paths = list(dict.fromkeys(_mh_topmost_missing(path) for path in paths))
    backup_dir = _os.path.normpath(req["backup_dir"])
    roots = record_roots(backup_dir, paths, [])
    return {"bytes": take_snapshot(backup_dir, req["name"], roots), "paths": paths}


def _mh_restore(req):
    name = req["name"]
    problem = check_name(name)
    if problem:
        return {"error": problem}
    backup_dir = _os.path.normpath(req["backup_dir"])
    manifest = read_manifest(backup_dir, name)
    if manifest is None:
        return {"error": "snapshot %r not found in backup_dir %r" % (name, backup_dir)}
    warnings, restored = [], 0
    for root in manifest["roots"]:
        steps = plan_restore(root["records"], root.get("exclude", ()), skip=[backup_dir])
        restored += len(steps)
        warnings.extend(apply_restore(steps, lambda sha256: blob_path(backup_dir, name, sha256)))
    if req["remove"]:
        delete_snapshot(backup_dir, name)
    return {"restored": restored, "warnings": warnings}


def _mh_append(lines):
    # (umask 077; mkdir -p DIR && printf %s TEXT >> FILE): a 0700 directory, a 0600 file, appended.
    old = _os.umask(0o077)
    try:
        _os.makedirs(lines["dir"], exist_ok=True)
        fd = _os.open(lines["path"], _os.O_WRONLY | _os.O_APPEND | _os.O_CREAT, 0o666)
        try:
            data = lines["text"].encode()
            while data:
                data = data[_os.write(fd, data):]
        finally:
            _os.close(fd)
    finally:
        _os.umask(old)


try:
    _mh_answer = (_mh_snapshot if REQUEST["op"] == "snapshot" else _mh_restore)(REQUEST)
except Exception as _mh_err:
    _mh_answer = {"error": "%s: %s" % (type(_mh_err).__name__, _mh_err)}
if REQUEST.get("journal") and "error" not in _mh_answer:
    try:
        _mh_append(REQUEST["journal"])
        _mh_answer["journal"] = True
    except Exception as _mh_err:
        _mh_answer["journal"] = "%s: %s" % (type(_mh_err).__name__, _mh_err)
print(_json.dumps(_mh_answer))
"""


@functools.cache
def script_source() -> bytes:
    """The collection's snapshot code and the driver, as one stdlib-only script (read once per process)."""
    folder = collections_dir() / "ansible_collections" / "mh_ansible" / "rollback" / "plugins" / "module_utils"
    parts = ["from __future__ import annotations"]
    for name in _MODULE_UTILS:
        text = (folder / name).read_text()
        # One __future__ import at the top; the collection's own imports are this script's names already.
        text = re.sub(r"^from __future__ import annotations\n", "", text, flags=re.MULTILINE)
        text = re.sub(r"^from ansible_collections\.[^\n]*\n", "", text, flags=re.MULTILINE)
        parts.append(text)
    parts.append(_DRIVER)
    return "\n".join(parts).encode()


def _by_agent(host: MultihostHost, request: dict[str, Any]) -> dict[str, Any] | None:
    """Run the script for ``request`` on the host's agent: its answer, or None when the host has no agent.

    An answer with ``error`` has the module do the work: the script failed, or (``lost`` too) its
    answer did not come back whole, so whether it did the work and wrote the journal's lines is
    not known.
    """
    started = time.monotonic()
    served = host.conn._mh_script(script_source(), request)
    if served is None:
        return None
    rc, out, err = served
    try:
        answer = json.loads(out.decode(errors="replace").strip().splitlines()[-1]) if rc == 0 else None
    except (ValueError, IndexError):
        answer = None
    if not isinstance(answer, dict):
        answer = {"error": f"rc {rc}: {err.decode(errors='replace').strip()}", "lost": True}
    done = "taken" if request["op"] == "snapshot" else "restored"
    if "error" in answer:
        why = answer["error"]
        log.debug("%s: snapshot %s not %s by the agent (%s): the module does it", host.name, request["name"], done, why)
        return answer
    log.debug(
        "%s: snapshot %s %s by the agent in %.0f ms",
        host.name,
        request["name"],
        done,
        (time.monotonic() - started) * 1000,
    )
    if request.get("journal") and answer.get("journal") is not True:
        why = answer.get("journal")
        log.debug("%s: the journal's lines not written by the agent (%s): written apart", host.name, why)
    return answer


def _journal_written(answer: dict[str, Any] | None) -> bool | None:
    """Whether the script wrote the journal's lines: True, False, or None when not known (its answer was lost)."""
    if answer is not None and answer.get("lost"):
        return None
    return answer is not None and answer.get("journal") is True


def _topmost_missing(host: MultihostHost, paths: Sequence[str]) -> list[str]:
    """For each path, itself if its parent exists, else its topmost missing ancestor (one round trip)."""
    quoted = " ".join(shlex.quote(p) for p in paths)
    script = (
        f'for p in {quoted}; do q="$p"; '
        'while d=$(dirname "$q"); [ "$d" != "$q" ] && [ ! -e "$d" ]; do q="$d"; done; echo "$q"; done'
    )
    out = host.conn.run(script, raise_on_error=False)
    found = out.stdout.splitlines()
    if out.rc != 0 or len(found) != len(paths):
        # Without it the parents that the module creates would be left behind by the rollback.
        raise RollbackError(
            host.name,
            f"the snapshot of {', '.join(paths)}",
            f"its missing parent directories could not be found (exit {out.rc})",
        )
    return list(dict.fromkeys(found))


def take(
    host: MultihostHost,
    paths: Sequence[str],
    name: str,
    *,
    missing_parents: bool = False,
    entry: ScriptedEntry | None = None,
) -> list[str]:
    """Snapshot ``paths`` on ``host`` as ``name`` (see ``mh_ansible.rollback.snapshot``).

    With ``missing_parents`` (for a module that creates missing parent directories), a path whose
    parent is missing is snapshotted from its topmost missing ancestor: the agent finds it in the
    same call; without the agent, one command finds it before the module runs.

    :param entry: The journal's entry for the change, which the agent's script appends once the
        snapshot is taken; settled here with :meth:`~.host_journal.ScriptedEntry.read` (never
        written when the module takes the snapshot: the caller writes it apart).
    :return: The paths snapshotted.
    :raises ModuleError: Neither the agent nor the module could take it (the module's message).
    """
    args: dict[str, Any] = {"paths": list(paths), "name": name, "backup_dir": SNAPSHOT_DIR}
    request: dict[str, Any] = {"op": "snapshot", "missing_parents": missing_parents, **args}
    if entry is not None:
        request["journal"] = entry.request
    try:
        answer = _by_agent(host, request)
    except BaseException:
        if entry is not None:
            entry.read(None)  # the agent was lost during the script: it may have written the entry
        raise
    if entry is not None:
        entry.read(_journal_written(answer))
    if answer is None or "error" in answer:
        if missing_parents:
            args["paths"] = _topmost_missing(host, paths)
        host.ansible.run("mh_ansible.rollback.snapshot", args)
        return list(args["paths"])
    args["paths"] = [str(path) for path in answer.get("paths") or args["paths"]]
    host.journal.log_call(host.name, "module", "mh_ansible.rollback.snapshot", args)
    return list(args["paths"])


def restore(host: MultihostHost, name: str, *, journal: Mapping[str, str] | None = None) -> bool:
    """Put the paths of snapshot ``name`` back and remove it (see ``mh_ansible.rollback.restore``).

    :param journal: Lines for the agent's script to append to the journal on the host once the
        restore succeeded (a done mark: :meth:`~.host_journal.HostJournal.carry_script`).
    :returns: Whether those lines were written (never when the module restored).
    :raises ModuleError: Neither the agent nor the module could restore it (the module's message).
    """
    args: dict[str, Any] = {"name": name, "backup_dir": SNAPSHOT_DIR, "remove": True}
    request: dict[str, Any] = {"op": "restore", **args}
    if journal is not None:
        request["journal"] = dict(journal)
    answer = _by_agent(host, request)
    if answer is None or "error" in answer:
        result = host.ansible.run("mh_ansible.rollback.restore", args)
        _report(host, name, [str(w) for w in result.raw.get("not_restored") or []])
        return False
    host.journal.log_call(host.name, "module", "mh_ansible.rollback.restore", args)
    _report(host, name, answer.get("warnings") or [])
    return _journal_written(answer) is True


@final
class Restore:
    """The undo of a snapshot: calling it restores; :meth:`carrying` has the restore write journal lines too.

    Like :class:`~.accounts.CommandUndo`, for the journal on the host: the agent's script that
    restores appends the entry's done mark after a successful restore, at no round trip of its own.
    Example::

        undo = Restore(host, "mh-7")
        undo()                     # restored, the snapshot removed
        undo.carrying(lines)       # the same, then the lines appended by the same script; whether they were
    """

    def __init__(self, host: MultihostHost, name: str) -> None:
        self.host = host
        self.name = name

    def __call__(self) -> None:
        restore(self.host, self.name)

    def carrying(self, journal: Mapping[str, str]) -> bool:
        """Restore, with ``journal``'s lines appended by the same script once it succeeded; whether they were.

        :raises ModuleError: Neither the agent nor the module could restore it: nothing is written.
        """
        return restore(self.host, self.name, journal=journal)


def _report(host: MultihostHost, name: str, warnings: Sequence[str]) -> None:
    """What a restore could not put back exactly (a socket that could not be bound again): not reverted."""
    for warning in warnings:
        host.journal.note(host, f"not reverted: snapshot {name}: {warning}")
