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

__all__ = ["HostLocks"]

log = logging.getLogger("pytest_mh_ansible")


class HostLocks:
    """Advisory ``flock`` locks, one file per host, in a directory shared by the machine's processes.

    Locks are taken in sorted order, so two processes that need overlapping sets of
    hosts cannot deadlock. The kernel drops a lock when its process dies.
    """

    def __init__(self, directory: str | None = None) -> None:
        self.directory = Path(directory or os.path.join(tempfile.gettempdir(), "pytest-mh-ansible-locks"))
        self._held: dict[str, IO[bytes]] = {}

    def _path(self, key: str) -> Path:
        digest = hashlib.sha256(key.encode()).hexdigest()[:24]
        return self.directory / f"{digest}.lock"

    def acquire(self, keys: Iterable[str]) -> None:
        """Lock every key not yet held by this process (blocking, in sorted order)."""
        self.directory.mkdir(mode=0o1777, parents=True, exist_ok=True)
        for key in sorted(set(keys) - set(self._held)):
            handle = open(self._path(key), "ab")  # noqa: SIM115 - held until release()
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
