"""File-system state shared by the rollback modules: walk paths into records, compare them, put them back.

This file runs on the managed host: standard library only, Python 3.8 syntax.

A *record* is a JSON-friendly dict describing one path, taken with ``lstat`` (links are never followed)::

    {"path": "/etc/motd", "type": "file", "mode": 420, "uid": 0, "gid": 0, "size": 286, "sha256": "..."}

``type`` is one of ``absent``, ``file``, ``directory``, ``symlink`` or ``other``; symlinks carry ``target``,
``other`` entries (fifos, sockets, devices) carry ``kind`` and ``rdev`` but never content.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import fnmatch
import functools
import grp
import hashlib
import os
import pwd
import re
import shutil
import socket
import stat
import tempfile
from typing import Any, Dict, Iterable, Iterator, Sequence, Tuple

Record = Dict[str, Any]
Change = Tuple[str, str, str]

ABSENT = "absent"
FILE = "file"
DIRECTORY = "directory"
SYMLINK = "symlink"
OTHER = "other"

#: Files up to this size whose bytes decode as UTF-8 get a content diff instead of a summary line.
DIFF_MAX_BYTES = 64 * 1024
_CHUNK = 1024 * 1024
_TEMP_PREFIX = ".mh-rollback-"


def sha256_file(path: str) -> str:
    """Return the hex sha256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "char"
    if stat.S_ISBLK(mode):
        return "block"
    return "unknown"


def record_from_stat(path: str, st: os.stat_result, hash_content: bool = True) -> Record:
    """Describe ``path`` from its ``lstat`` result; files are hashed when ``hash_content`` is true."""
    mode = st.st_mode
    rec: Record = {"path": path, "mode": stat.S_IMODE(mode), "uid": st.st_uid, "gid": st.st_gid}
    if not stat.S_ISLNK(mode):
        xattrs = read_xattrs(path)
        if xattrs is not None:
            rec["xattrs"] = xattrs
    if stat.S_ISREG(mode):
        rec["type"] = FILE
        rec["size"] = st.st_size
        if st.st_nlink > 1:
            rec["links"] = st.st_nlink
            rec["ino"] = st.st_ino
            rec["dev"] = st.st_dev
            rec["siblings"] = _siblings(path, st)
        if hash_content:
            try:
                rec["sha256"] = sha256_file(path)
            except OSError as err:
                rec["error"] = err.strerror or str(err)
        else:
            rec["mtime"] = st.st_mtime_ns
    elif stat.S_ISDIR(mode):
        rec["type"] = DIRECTORY
    elif stat.S_ISLNK(mode):
        rec["type"] = SYMLINK
        rec["target"] = os.readlink(path)
    else:
        rec["type"] = OTHER
        rec["kind"] = _kind(mode)
        rec["rdev"] = st.st_rdev
    return rec


def read_xattrs(path: str) -> dict[str, str] | None:
    """Every extended attribute of ``path`` (ACLs, file capabilities, SELinux labels, user attributes),
    base64-encoded by name; None when the file system cannot list them (then they are left alone)."""
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return None
    found: dict[str, str] = {}
    for name in sorted(names):
        try:
            found[name] = base64.b64encode(os.getxattr(path, name, follow_symlinks=False)).decode("ascii")
        except OSError:
            continue
    return found


def _siblings(path: str, st: os.stat_result) -> list[str]:
    """The other names of a hard-linked file in its own directory (where a restore can find its inode again)."""
    parent = os.path.dirname(path) or "."
    found = []
    try:
        with os.scandir(parent) as entries:
            for entry in entries:
                if entry.path != path and entry.inode() == st.st_ino and not entry.is_symlink():
                    found.append(entry.path)
    except OSError:
        return []
    return sorted(found)


def stat_record(path: str, hash_content: bool = True) -> Record:
    """Describe one path without following a final symlink; a missing path is ``{"type": "absent"}``."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {"path": path, "type": ABSENT}
    except NotADirectoryError:
        return {"path": path, "type": ABSENT}
    return record_from_stat(path, st, hash_content)


def is_excluded(root: str, path: str, patterns: Sequence[str]) -> bool:
    """Tell whether ``path`` (below ``root``) matches a glob by base name, path relative to root, or full path."""
    regex = exclusion(patterns)
    return regex is not None and _excluded(regex, os.path.basename(path), os.path.relpath(path, root), path)


@functools.lru_cache(maxsize=16)
def _exclusion(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(pattern)})" for pattern in patterns))


def exclusion(patterns: Sequence[str]) -> re.Pattern[str] | None:
    """The globs ``patterns`` as one regular expression (``fnmatchcase`` of each, in one match), or None.

    A walk tests every entry against every glob in three forms: 20 globs over a host's /etc, /home,
    /root and /var/lib were 290,000 ``fnmatchcase`` calls, most of a fingerprint's time.
    """
    return _exclusion(tuple(patterns))


def _excluded(regex: re.Pattern[str], name: str, rel: str, path: str) -> bool:
    return bool(regex.match(name) or regex.match(rel) or regex.match(path))


def walk(
    root: str,
    exclude: Sequence[str] = (),
    hash_content: bool = True,
    skip: Iterable[str] = (),
) -> list[Record]:
    """Record ``root`` and, for a directory, everything below it, parents before children, sorted by name.

    Entries matching an ``exclude`` glob are left out with everything below them; so are the absolute
    paths in ``skip`` (the snapshot area must never snapshot or restore itself). The root itself is
    always recorded, as ``absent`` when it does not exist.
    """
    skipped = {os.path.normpath(p) for p in skip}
    first = stat_record(root, hash_content)
    records = [first]
    if first["type"] == DIRECTORY:
        records.extend(_walk_dir(root, "", exclusion(exclude), hash_content, skipped))
    return records


def _walk_dir(path: str, rel: str, exclude: re.Pattern[str] | None, hash_content: bool, skip: set) -> Iterator[Record]:
    """The entries below ``path``; ``rel`` is its path relative to the walk's root (as ``os.path.relpath`` says)."""
    with os.scandir(path) as entries:
        found = sorted(entries, key=lambda entry: entry.name)
    for entry in found:
        child = os.path.join(path, entry.name)
        child_rel = rel + "/" + entry.name if rel else entry.name
        if child in skip or (exclude is not None and _excluded(exclude, entry.name, child_rel, child)):
            continue
        rec = record_from_stat(child, entry.stat(follow_symlinks=False), hash_content)
        yield rec
        if rec["type"] == DIRECTORY:
            yield from _walk_dir(child, child_rel, exclude, hash_content, skip)


_USER_NAMES: dict[int, str | None] = {}
_GROUP_NAMES: dict[int, str | None] = {}


def user_name(uid: int) -> str | None:
    """Name of a uid, or None when the host does not know it (cached)."""
    if uid not in _USER_NAMES:
        try:
            _USER_NAMES[uid] = pwd.getpwuid(uid).pw_name
        except KeyError:
            _USER_NAMES[uid] = None
    return _USER_NAMES[uid]


def group_name(gid: int) -> str | None:
    """Name of a gid, or None when the host does not know it (cached)."""
    if gid not in _GROUP_NAMES:
        try:
            _GROUP_NAMES[gid] = grp.getgrgid(gid).gr_name
        except KeyError:
            _GROUP_NAMES[gid] = None
    return _GROUP_NAMES[gid]


def add_names(rec: Record) -> Record:
    """Add ``owner``/``group`` names next to the numeric ids, for reports."""
    if "uid" in rec:
        rec["owner"] = user_name(rec["uid"])
        rec["group"] = group_name(rec["gid"])
    return rec


def _owner(rec: Record) -> str:
    user = user_name(rec["uid"])
    group = group_name(rec["gid"])
    return "{}:{}".format(user if user is not None else rec["uid"], group if group is not None else rec["gid"])


def describe(rec: Record) -> str:
    """One line saying what a record is, e.g. ``file mode 0644 owner root:root size 12``."""
    kind = rec["type"]
    if kind == ABSENT:
        return ABSENT
    words = [kind if kind != OTHER else rec.get("kind", OTHER)]
    if kind == SYMLINK:
        words.append("-> {}".format(rec["target"]))
    else:
        words.append("mode {:04o}".format(rec["mode"]))
    words.append(f"owner {_owner(rec)}")
    if kind == FILE:
        words.append(f"size {rec['size']}")
    return " ".join(words)


def differences(current: Record, wanted: Record) -> list[Change]:
    """What differs between two records of the same path, as ``(attribute, current, wanted)`` strings.

    A type change is reported alone, since nothing else about the two can be compared. File contents
    are compared by sha256 (both records must have been hashed). Symlink modes are ignored: Linux
    has none worth restoring.
    """
    if current["type"] != wanted["type"]:
        return [("type", current["type"], wanted["type"])]
    kind = wanted["type"]
    if kind == ABSENT:
        return []
    changes: list[Change] = []
    if kind == FILE and current.get("sha256") != wanted.get("sha256"):
        changes.append(("content", "sha256 {}".format(current.get("sha256")), "sha256 {}".format(wanted.get("sha256"))))
    if kind == SYMLINK and current["target"] != wanted["target"]:
        changes.append(("target", current["target"], wanted["target"]))
    if kind == OTHER and (current.get("kind"), current.get("rdev")) != (wanted.get("kind"), wanted.get("rdev")):
        changes.append(("kind", current.get("kind", ""), wanted.get("kind", "")))
    if kind != SYMLINK and current["mode"] != wanted["mode"]:
        changes.append(("mode", "{:04o}".format(current["mode"]), "{:04o}".format(wanted["mode"])))
    if current["uid"] != wanted["uid"]:
        changes.append(("owner", str(current["uid"]), str(wanted["uid"])))
    if current["gid"] != wanted["gid"]:
        changes.append(("group", str(current["gid"]), str(wanted["gid"])))
    # Extended attributes: compared only when both records have them (the file system lists them).
    if "xattrs" in wanted and "xattrs" in current and current["xattrs"] != wanted["xattrs"]:
        changes.append(("xattrs", ",".join(sorted(current["xattrs"])), ",".join(sorted(wanted["xattrs"]))))
    return changes


def _depth(path: str) -> int:
    return path.rstrip("/").count("/")


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def plan_restore(
    recorded: Sequence[Record],
    exclude: Sequence[str] = (),
    skip: Iterable[str] = (),
) -> list[Record]:
    """Compare a recorded tree (``recorded[0]`` is its root) with the disk and list what to do.

    Each step is ``{"path", "action": "remove"|"create"|"update", "changes", "current", "wanted"}``.
    Removals come first, deepest first and only the topmost path of a removed subtree; then creations
    and updates, parents before children. Excluded and skipped paths are neither compared nor touched.
    """
    root = recorded[0]["path"]
    skip = tuple(skip)
    current = {rec["path"]: rec for rec in walk(root, exclude, hash_content=True, skip=skip)}
    wanted = {rec["path"]: rec for rec in recorded}
    removals: list[Record] = []
    for path in sorted(current, key=_depth, reverse=True):
        cur = current[path]
        want = wanted.get(path)
        if cur["type"] == ABSENT or (want is not None and want["type"] == cur["type"]):
            continue
        removals.append({"path": path, "action": "remove", "changes": [], "current": cur, "wanted": want})
    # A subtree goes in one rmtree: keep only removals whose parents stay.
    removed_dirs = [step["path"] for step in removals if step["current"]["type"] == DIRECTORY]
    steps = [
        step for step in removals if not any(_under(step["path"], top) and step["path"] != top for top in removed_dirs)
    ]
    removed_set = {step["path"] for step in removals}
    for rec in recorded:
        path = rec["path"]
        if rec["type"] == ABSENT:
            continue
        cur = current.get(path)
        if cur is None or cur["type"] == ABSENT or path in removed_set:
            steps.append({"path": path, "action": "create", "changes": [], "current": cur, "wanted": rec})
            continue
        changes = differences(cur, rec)
        if changes:
            steps.append({"path": path, "action": "update", "changes": changes, "current": cur, "wanted": rec})
    return steps


def _set_owner_mode(path: str, rec: Record, changes: Sequence[Change], force: bool = False) -> None:
    attrs = {change[0] for change in changes}
    if force or "owner" in attrs or "group" in attrs:
        os.lchown(path, rec["uid"], rec["gid"])
    # chown clears setuid/setgid bits, so the mode is set after the owner every time the owner is touched.
    if rec["type"] != SYMLINK and (force or attrs & {"mode", "owner", "group"}):
        os.chmod(path, rec["mode"])


def _write_file(path: str, rec: Record, blob: str) -> None:
    parent = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=_TEMP_PREFIX, dir=parent)
    try:
        with os.fdopen(fd, "wb") as out, open(blob, "rb") as src:
            shutil.copyfileobj(src, out, _CHUNK)
            out.flush()
            os.fchown(out.fileno(), rec["uid"], rec["gid"])
            os.fchmod(out.fileno(), rec["mode"])
        if "mtime" in rec:
            os.utime(tmp, ns=(rec["mtime"], rec["mtime"]))
        os.rename(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_in_place(path: str, blob: str) -> None:
    """Write ``blob`` into the file's own inode: every hard link of it sees the restored content."""
    with open(path, "r+b") as out, open(blob, "rb") as src:
        out.truncate(0)
        shutil.copyfileobj(src, out, _CHUNK)


def _restore_content(path: str, rec: Record, blob: str) -> str | None:
    """Put a file's content back; a hard-linked file keeps (or gets back) its inode where that can be done.

    Returns a warning when a file that had other links could only be written as a new file.
    """
    links = rec.get("links", 1)
    if links <= 1:
        _write_file(path, rec, blob)
        return None
    inode = (rec["dev"], rec["ino"])
    with contextlib.suppress(OSError):
        st = os.lstat(path)
        if (st.st_dev, st.st_ino) == inode:  # changed in place: its other links changed with it
            _write_in_place(path, blob)
            _set_owner_mode(path, rec, (), force=True)
            return None
    for sibling in rec.get("siblings", ()):
        try:
            st = os.lstat(sibling)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) != inode:
            continue
        parent = os.path.dirname(path) or "."
        tmp = tempfile.mktemp(prefix=_TEMP_PREFIX, dir=parent)  # a link cannot be made with mkstemp
        os.link(sibling, tmp)
        os.rename(tmp, path)
        if sha256_file(path) != rec["sha256"]:
            _write_in_place(path, blob)
        _set_owner_mode(path, rec, (), force=True)
        return None
    _write_file(path, rec, blob)
    return f"{path}: had {links} hard links; its content is back in a new file (its other links keep the old inode)"


def _set_xattrs(path: str, rec: Record, changes: Sequence[Change], force: bool = False) -> None:
    """Extended attributes as recorded: extra ones removed, missing or different ones set.

    After the owner and mode, since a chown clears file capabilities and a write may drop them.
    """
    wanted = rec.get("xattrs")
    if wanted is None or not (force or any(change[0] == "xattrs" for change in changes)):
        return
    current = read_xattrs(path) or {}
    for name in current:
        if name not in wanted:
            with contextlib.suppress(OSError):
                os.removexattr(path, name, follow_symlinks=False)
    # The ACL first (it sets the mode's group bits), the capability last (a chown or write would clear it).
    for name in sorted(wanted, key=lambda n: (n == "security.capability", not n.startswith("system."))):
        value = base64.b64decode(wanted[name])
        if current.get(name) != wanted[name]:
            os.setxattr(path, name, value, follow_symlinks=False)


def _make_symlink(path: str, rec: Record) -> None:
    parent = os.path.dirname(path) or "."
    tmp = tempfile.mktemp(prefix=_TEMP_PREFIX, dir=parent)  # a symlink cannot be made with mkstemp
    os.symlink(rec["target"], tmp)
    try:
        os.lchown(tmp, rec["uid"], rec["gid"])
        os.rename(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _make_other(path: str, rec: Record) -> str | None:
    kind = rec.get("kind")
    if kind == "fifo":
        os.mkfifo(path, 0o600)
    elif kind in ("char", "block"):
        flag = stat.S_IFCHR if kind == "char" else stat.S_IFBLK
        os.mknod(path, 0o600 | flag, rec.get("rdev", 0))
    elif kind == "socket":
        # A socket file is made by binding it; no process listens on it (nor did the snapshot keep one).
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(path)
        except OSError as err:
            return f"{path}: cannot recreate the socket ({err.strerror}), left absent"
        finally:
            listener.close()
    else:
        return f"{path}: cannot recreate a {kind}, left absent"
    _set_owner_mode(path, rec, (), force=True)
    return None


def remove_path(path: str) -> None:
    """Remove a path of any type; directories recursively, symlinks without following them."""
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def apply_restore(steps: Sequence[Record], blob_for: Any) -> list[str]:
    """Carry out :func:`plan_restore` steps; ``blob_for(sha256)`` names the stored content of a file.

    Directories are created 0700 and get their recorded mode and owner last, deepest first, so a
    read-only directory can still be filled. Returns warnings (a socket cannot be recreated); raises OSError.
    """
    dirs: list[Record] = []
    warnings: list[str] = []
    for step in steps:
        path, rec, action = step["path"], step["wanted"], step["action"]
        if action == "remove":
            remove_path(path)
            continue
        if action == "create":
            parent = os.path.dirname(path)
            if parent and not os.path.isdir(parent):
                os.makedirs(parent)
        kind = rec["type"]
        if kind == DIRECTORY:
            if action == "create":
                os.mkdir(path, 0o700)
            dirs.append(step)
        elif kind == FILE:
            changed = {change[0] for change in step["changes"]}
            if action == "create" or "content" in changed:
                warning = _restore_content(path, rec, blob_for(rec["sha256"]))
                if warning:
                    warnings.append(warning)
                _set_xattrs(path, rec, step["changes"], force=True)
            else:
                _set_owner_mode(path, rec, step["changes"])
                _set_xattrs(path, rec, step["changes"])
        elif kind == SYMLINK:
            changed = {change[0] for change in step["changes"]}
            if action == "create" or "target" in changed:
                _make_symlink(path, rec)
            else:
                _set_owner_mode(path, rec, step["changes"])
        elif action == "create" or any(change[0] == "kind" for change in step["changes"]):
            if action != "create":
                os.unlink(path)
            warning = _make_other(path, rec)
            if warning:
                warnings.append(warning)
            else:
                _set_xattrs(path, rec, step["changes"], force=True)
        else:
            _set_owner_mode(path, rec, step["changes"])
            _set_xattrs(path, rec, step["changes"])
    for step in sorted(dirs, key=lambda s: _depth(s["path"]), reverse=True):
        _set_owner_mode(step["path"], step["wanted"], step["changes"], force=step["action"] == "create")
        _set_xattrs(step["path"], step["wanted"], step["changes"], force=step["action"] == "create")
    return warnings


def _text(path: str, size: int) -> str | None:
    if size > DIFF_MAX_BYTES:
        return None
    try:
        with open(path, "rb") as handle:
            data = handle.read(DIFF_MAX_BYTES + 1)
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def step_diff(step: Record, blob_for: Any) -> dict[str, str]:
    """Ansible diff entry for one step: content for small text files, otherwise summary lines."""
    path, cur, want = step["path"], step["current"], step["wanted"]
    entry = {"before_header": path, "after_header": path}
    if step["action"] == "remove":
        entry.update(before=describe(cur) + "\n", after=ABSENT + "\n")
        return entry
    if step["action"] == "create":
        before = describe(cur) if cur is not None and cur["type"] != ABSENT else ABSENT
        after = describe(want)
        if want["type"] == FILE:
            text = _text(blob_for(want["sha256"]), want["size"])
            if text is not None:
                entry.update(before="", after=text)
                entry["before_header"] = f"{path} ({before})"
                return entry
        entry.update(before=before + "\n", after=after + "\n")
        return entry
    changes = step["changes"]
    if any(change[0] == "content" for change in changes):
        old = _text(path, cur.get("size", 0))
        new = _text(blob_for(want["sha256"]), want.get("size", 0))
        if old is not None and new is not None:
            others = [change for change in changes if change[0] != "content"]
            if others:
                entry["before_header"] = f"{path} ({summary(others)})"
            entry.update(before=old, after=new)
            return entry
    entry.update(
        before="".join(f"{attr} {old}\n" for attr, old, _ in changes),
        after="".join(f"{attr} {new}\n" for attr, _, new in changes),
    )
    return entry


def summary(changes: Sequence[Change]) -> str:
    """Join changes into one line: ``mode 0600 -> 0644, content``."""
    parts = []
    for attr, old, new in changes:
        parts.append("content changed" if attr == "content" else f"{attr} {old} -> {new}")
    return ", ".join(parts)


def ensure_dir(path: str, mode: int = 0o700) -> None:
    """Create a directory (and parents) if needed and force its mode."""
    try:
        os.makedirs(path, mode)
    except OSError as err:
        if err.errno != errno.EEXIST or not os.path.isdir(path):
            raise
    os.chmod(path, mode)
