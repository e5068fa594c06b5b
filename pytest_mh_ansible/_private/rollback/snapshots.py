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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import RollbackError
from ..ansible.collection import collections_dir

if TYPE_CHECKING:
    from ...host import MultihostHost

__all__ = ["SNAPSHOT_DIR", "restore", "take"]

log = logging.getLogger("pytest_mh_ansible.rollback")

SNAPSHOT_DIR = "/var/lib/mh-ansible/snapshots"

_MODULE_UTILS = ("_fsstate.py", "_snapshots.py")

# What the snapshot and restore modules do around the shared code, minus Ansible's module frame:
# the same checks, the same calls, the same snapshot removal. It prints one JSON line.
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


try:
    _mh_answer = (_mh_snapshot if REQUEST["op"] == "snapshot" else _mh_restore)(REQUEST)
except Exception as _mh_err:
    _mh_answer = {"error": "%s: %s" % (type(_mh_err).__name__, _mh_err)}
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
    """Run the script for ``request`` on the host's agent: its answer, or None (then a module does it)."""
    started = time.monotonic()
    served = host.conn._mh_script(script_source(), request)
    if served is None:
        return None
    rc, out, err = served
    try:
        answer = json.loads(out.decode(errors="replace").strip().splitlines()[-1]) if rc == 0 else None
    except (ValueError, IndexError):
        answer = None
    done = "taken" if request["op"] == "snapshot" else "restored"
    if not isinstance(answer, dict) or "error" in answer:
        why = answer["error"] if isinstance(answer, dict) else f"rc {rc}: {err.decode(errors='replace').strip()}"
        log.debug("%s: snapshot %s not %s by the agent (%s): the module does it", host.name, request["name"], done, why)
        return None
    log.debug(
        "%s: snapshot %s %s by the agent in %.0f ms",
        host.name,
        request["name"],
        done,
        (time.monotonic() - started) * 1000,
    )
    return answer


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


def take(host: MultihostHost, paths: Sequence[str], name: str, *, missing_parents: bool = False) -> list[str]:
    """Snapshot ``paths`` on ``host`` as ``name`` (see ``mh_ansible.rollback.snapshot``).

    With ``missing_parents`` (for a module that creates missing parent directories), a path whose
    parent is missing is snapshotted from its topmost missing ancestor: the agent finds it in the
    same call; without the agent, one command finds it before the module runs.

    :return: The paths snapshotted.
    :raises ModuleError: Neither the agent nor the module could take it (the module's message).
    """
    args: dict[str, Any] = {"paths": list(paths), "name": name, "backup_dir": SNAPSHOT_DIR}
    answer = _by_agent(host, {"op": "snapshot", "missing_parents": missing_parents, **args})
    if answer is None:
        if missing_parents:
            args["paths"] = _topmost_missing(host, paths)
        host.ansible.run("mh_ansible.rollback.snapshot", args)
        return list(args["paths"])
    args["paths"] = [str(path) for path in answer.get("paths") or args["paths"]]
    host.journal.log_call(host.name, "module", "mh_ansible.rollback.snapshot", args)
    return list(args["paths"])


def restore(host: MultihostHost, name: str) -> None:
    """Put the paths of snapshot ``name`` back and remove it (see ``mh_ansible.rollback.restore``).

    :raises ModuleError: Neither the agent nor the module could restore it (the module's message).
    """
    args: dict[str, Any] = {"name": name, "backup_dir": SNAPSHOT_DIR, "remove": True}
    answer = _by_agent(host, {"op": "restore", **args})
    if answer is None:
        result = host.ansible.run("mh_ansible.rollback.restore", args)
        _report(host, name, [str(w) for w in result.raw.get("not_restored") or []])
        return
    host.journal.log_call(host.name, "module", "mh_ansible.rollback.restore", args)
    _report(host, name, answer.get("warnings") or [])


def _report(host: MultihostHost, name: str, warnings: Sequence[str]) -> None:
    """What a restore could not put back exactly (a socket that could not be bound again): not reverted."""
    for warning in warnings:
        host.journal.note(host, f"not reverted: snapshot {name}: {warning}")
