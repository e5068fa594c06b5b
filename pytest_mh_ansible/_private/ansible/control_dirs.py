"""The private directories of this process's ssh ControlMaster sockets, and their removal on a hard exit.

A transport (and the standard executor) gives the ssh connection plugin a directory of its own for
its ControlPath, so that sessions never share a master, and removes it when it closes. A second
signal ends the run at once (``os._exit``: no teardown, no close), which left those directories,
empty once their masters exit, in ``/tmp``: three per interrupted session. The exit calls
:func:`remove_all` first.

Usage::

    path = control_dirs.make("mh-cp-")     # instead of tempfile.mkdtemp
    ...
    control_dirs.remove(path)              # on close
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading

_lock = threading.Lock()
_made: dict[str, int] = {}  # path -> the pid that made it (a forked child must not remove its parent's)


def make(prefix: str) -> str:
    """A new private directory (mode 0700) under the system's temp directory, remembered until removed."""
    path = tempfile.mkdtemp(prefix=prefix)
    with _lock:
        _made[path] = os.getpid()
    return path


def remove(path: str) -> None:
    """Remove ``path`` and forget it (what is left of a master's socket goes with it)."""
    with _lock:
        _made.pop(path, None)
    shutil.rmtree(path, ignore_errors=True)


def remove_all() -> None:
    """Remove every directory this process made and has not removed: for an exit that skips every close."""
    pid = os.getpid()
    with _lock:
        paths = [path for path, owner in _made.items() if owner == pid]
        for path in paths:
            del _made[path]
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
