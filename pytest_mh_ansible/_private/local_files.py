"""Local directories and files that others must not be able to change: exact modes, owner checks, no symlinks.

Lock and lab directories live in /tmp and /var/tmp, where anyone can create a name first. A
directory is used only if it is a real directory (not a symbolic link), owned by root or by the
user running pytest, and writable by nobody else; files in it are opened with ``O_NOFOLLOW``.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from ..errors import UnsafePathError

__all__ = ["check_private_dir", "open_private", "private_dir", "replace_file", "write_private"]


def _trusted_owners() -> set[int]:
    return {0, os.geteuid()}


def private_dir(path: str | Path, mode: int = 0o700) -> Path:
    """Create ``path`` (and missing parents) with exactly ``mode``, or check the one that exists.

    The mode is set with chmod after mkdir, so the umask cannot reduce it. An existing directory
    is used as it is (its mode is not widened), provided it passes the checks.

    :raises UnsafePathError: ``path`` is a symbolic link or not a directory, is owned by another
        user, or can be written by group or others.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        pass
    else:
        os.chmod(path, mode, follow_symlinks=False)
    check_private_dir(path)
    return path


def check_private_dir(path: str | Path) -> None:
    """Refuse a directory that someone other than root or this user could change (see :func:`private_dir`)."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePathError(str(path), "is a symbolic link; refusing to use it (remove it)")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePathError(str(path), "is not a directory")
    if st.st_uid not in _trusted_owners():
        raise UnsafePathError(
            str(path), f"is owned by uid {st.st_uid}, not by root or by you (uid {os.geteuid()}); refusing to use it"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafePathError(
            str(path), f"can be written by others (mode {stat.S_IMODE(st.st_mode):04o}); refusing to use it"
        )


def open_private(path: str | Path, flags: int = os.O_RDWR | os.O_CREAT, mode: int = 0o600) -> int:
    """``os.open`` that never follows a symbolic link at ``path`` and creates files with ``mode`` exactly.

    :raises UnsafePathError: ``path`` is a symbolic link.
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as err:
        if os.path.islink(path):
            raise UnsafePathError(str(path), "is a symbolic link; refusing to open it") from None
        raise err
    if flags & os.O_CREAT:
        os.fchmod(fd, mode)
    return fd


def write_private(path: str | Path, data: str | bytes, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data``: the old file (or a symbolic link planted there) is removed first."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def replace_file(path: Path, text: str) -> None:
    """Put ``text`` at ``path`` in one step (a file 0600, written aside then renamed over it).

    For caches that several processes (xdist workers) may write at once: a reader sees the old
    entry or the new one, never half of one. The parent is made (0700) if missing.

    :raises OSError: The file could not be written (the caller decides whether that matters).
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)  # mkstemp: 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
