"""Per-host locks, so that two pytest processes (xdist workers) never use one host at the same time."""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from ..local_files import open_private, private_dir

__all__ = ["HostLocks"]

log = logging.getLogger("pytest_mh_ansible")


class HostLocks:
    """Advisory ``flock`` locks, one file per host, in a directory shared by the user's pytest processes.

    Locks are taken in sorted order, so two processes that need overlapping sets of
    hosts cannot deadlock. The kernel drops a lock when its process dies.

    The directory (``$TMPDIR/pytest-mh-ansible-locks-<uid>``, mode 0700) is the user's own:
    one that another user owns or can write, or a symbolic link, is refused
    (:class:`~pytest_mh_ansible.errors.UnsafePathError`), and lock files are never opened
    through a symbolic link.
    """

    def __init__(self, directory: str | None = None) -> None:
        default = os.path.join(tempfile.gettempdir(), f"pytest-mh-ansible-locks-{os.geteuid()}")
        self.directory = Path(directory or default)
        self._held: dict[str, IO[bytes]] = {}

    def _path(self, key: str) -> Path:
        digest = hashlib.sha256(key.encode()).hexdigest()[:24]
        return self.directory / f"{digest}.lock"

    def acquire(self, keys: Iterable[str]) -> None:
        """Lock every key not yet held by this process (blocking, in sorted order)."""
        private_dir(self.directory, 0o700)
        for key in sorted(set(keys) - set(self._held)):
            fd = open_private(self._path(key), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            handle = os.fdopen(fd, "ab")  # held until release()
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                log.info("waiting for host %s: another pytest process uses it", key)
                started = time.monotonic()
                fcntl.flock(handle, fcntl.LOCK_EX)
                log.info("got host %s after %.1f s", key, time.monotonic() - started)
            self._held[key] = handle

    def release(self, keys: Iterable[str] | None = None) -> None:
        """Unlock ``keys`` (all held keys when None)."""
        for key in list(self._held if keys is None else keys):
            handle = self._held.pop(key, None)
            if handle is not None:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()

    @property
    def held(self) -> frozenset[str]:
        return frozenset(self._held)
