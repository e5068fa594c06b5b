"""The snapshot area on the managed host: one directory per snapshot with a JSON manifest and stored file contents.

Layout: ``<backup_dir>/<name>/manifest.json`` and ``<backup_dir>/<name>/blobs/<sha256>``; contents are
stored once per distinct sha256. Runs on the managed host: standard library only, Python 3.8 syntax.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from typing import Any

from ansible_collections.mh_ansible.rollback.plugins.module_utils._fsstate import FILE, add_names, ensure_dir, walk

DEFAULT_BACKUP_DIR = "/var/lib/mh-ansible/snapshots"
MANIFEST = "manifest.json"
BLOBS = "blobs"
FORMAT = 1
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._@+-]*$")
_CHUNK = 1024 * 1024


def check_name(name: str) -> str | None:
    """Return an error message when ``name`` cannot be a snapshot directory name, else None."""
    if not _NAME.match(name):
        return f"snapshot name {name!r} must be letters, digits and . _ @ + - and not start with a dot or dash"
    return None


def snapshot_dir(backup_dir: str, name: str) -> str:
    """Directory holding the snapshot ``name``."""
    return os.path.join(backup_dir, name)


def store_blob(src: str, blobs: str) -> tuple[str, int]:
    """Copy a file's bytes into ``blobs`` under their sha256 in one read; return (sha256, bytes newly stored)."""
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(prefix=".blob-", dir=blobs)
    try:
        with os.fdopen(fd, "wb") as out, open(src, "rb") as handle:
            for chunk in iter(lambda: handle.read(_CHUNK), b""):
                digest.update(chunk)
                out.write(chunk)
            size = out.tell()
        sha = digest.hexdigest()
        final = os.path.join(blobs, sha)
        if os.path.exists(final):
            os.unlink(tmp)
            return sha, 0
        os.chmod(tmp, 0o600)
        os.rename(tmp, final)
        return sha, size
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_snapshot(backup_dir: str, name: str, roots: list[dict[str, Any]], copy: Any) -> None:
    """Write a snapshot atomically, replacing one of the same name.

    ``roots`` are ``{"path", "exclude", "records"}`` dicts; ``copy(blobs_dir)`` stores file contents into
    the new snapshot's blob directory (filling in each record's sha256) before the manifest is written.
    """
    ensure_dir(backup_dir, 0o700)
    work = tempfile.mkdtemp(prefix=f".{name}.partial-", dir=backup_dir)
    try:
        blobs = os.path.join(work, BLOBS)
        os.mkdir(blobs, 0o700)
        copy(blobs)
        manifest = {"format": FORMAT, "name": name, "created": time.time(), "roots": roots}
        with open(os.path.join(work, MANIFEST), "w") as out:
            json.dump(manifest, out, sort_keys=True)
        final = snapshot_dir(backup_dir, name)
        old = None
        if os.path.lexists(final):
            old = tempfile.mkdtemp(prefix=f".{name}.old-", dir=backup_dir)
            os.rename(final, os.path.join(old, name))
        os.rename(work, final)
        if old is not None:
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def record_roots(backup_dir: str, paths: list[str], exclude: list[str]) -> list[dict[str, Any]]:
    """Walk ``paths`` into the ``roots`` of a snapshot (records with owner names, contents not read yet)."""
    return [
        {
            "path": path,
            "exclude": exclude,
            "records": [add_names(rec) for rec in walk(path, exclude, hash_content=False, skip=[backup_dir])],
        }
        for path in paths
    ]


def take_snapshot(backup_dir: str, name: str, roots: list[dict[str, Any]]) -> int:
    """Store the contents of ``roots``' files and write the snapshot ``name``; return the bytes copied."""
    copied = [0]

    def copy(blobs: str) -> None:
        for rec in file_records(roots):
            rec["sha256"], stored = store_blob(rec["path"], blobs)
            copied[0] += stored

    write_snapshot(backup_dir, name, roots, copy)
    return copied[0]


def read_manifest(backup_dir: str, name: str) -> dict[str, Any] | None:
    """Load a snapshot's manifest, or None when there is no such snapshot."""
    path = os.path.join(snapshot_dir(backup_dir, name), MANIFEST)
    try:
        with open(path) as handle:
            manifest = json.load(handle)
    except FileNotFoundError:
        return None
    if manifest.get("format") != FORMAT:
        raise ValueError("{}: unknown snapshot format {!r}".format(path, manifest.get("format")))
    return manifest


def blob_path(backup_dir: str, name: str, sha256: str) -> str:
    """Where the content with this sha256 is stored in a snapshot."""
    return os.path.join(snapshot_dir(backup_dir, name), BLOBS, sha256)


def delete_snapshot(backup_dir: str, name: str) -> None:
    """Remove a snapshot directory."""
    shutil.rmtree(snapshot_dir(backup_dir, name))


def file_records(roots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """All file records of a snapshot, in order."""
    return [rec for root in roots for rec in root["records"] if rec["type"] == FILE]
