"""The machine's registry of labs: where each lab that is up lives, so ``lab down --name N`` finds it anywhere.

A lab's name is machine-wide (its bridge, network namespaces and cgroups are named after it),
but its directory is anywhere ``lab up --dir D`` put it. The registry maps each name to its
directory: one small JSON file per name under ``/run/pytest-mh-ansible/labs/`` (a tmpfs, emptied
at boot, when every lab is gone too), each with a lock file of its own, so two processes bringing
up or down the same name take turns while other labs go on.

Example::

    with registry.locked("webapp"):
        registry.register("webapp", Path("/srv/labs/webapp"))
    registry.lookup("webapp")  # Path("/srv/labs/webapp")
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from pytest_mh_ansible.errors import LabError

__all__ = ["DEFAULT_REGISTRY", "ENV_REGISTRY", "entries", "locked", "lookup", "register", "registry_root", "unregister"]

DEFAULT_REGISTRY: Final = Path("/run/pytest-mh-ansible/labs")
ENV_REGISTRY: Final = "PYTEST_MH_ANSIBLE_LAB_REGISTRY"
# Lab names as LabSpec accepts them: also safe as file names (no "/", no leading dot).
_NAME_RE: Final = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_ENTRY_SUFFIX: Final = ".json"
_LOCK_SUFFIX: Final = ".lock"


def registry_root() -> Path:
    """``$PYTEST_MH_ANSIBLE_LAB_REGISTRY`` or ``/run/pytest-mh-ansible/labs``."""
    return Path(os.environ.get(ENV_REGISTRY) or DEFAULT_REGISTRY)


def _check_name(name: str) -> str:
    if not _NAME_RE.match(name):
        raise LabError(f"lab name {name!r} is not valid (lower-case letters, digits, '-', '_'; up to 32)")
    return name


def _root(*, create: bool) -> Path | None:
    """The registry directory, made (mode 0755) if asked; refused if anyone but us or root could write to it."""
    root = registry_root()
    if create:
        root.mkdir(mode=0o755, parents=True, exist_ok=True)
    try:
        info = os.lstat(root)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        raise LabError(f"lab registry {root}: not a directory")
    if info.st_uid not in (0, os.geteuid()) or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise LabError(f"lab registry {root}: writable by others (mode {stat.S_IMODE(info.st_mode):o}); refusing it")
    return root


@contextmanager
def locked(name: str) -> Iterator[None]:
    """Hold lab ``name``'s lock (an flock on ``<registry>/<name>.lock``, mode 0600) while bringing it up or down."""
    _check_name(name)
    root = _root(create=True)
    assert root is not None
    fd = os.open(root / (name + _LOCK_SUFFIX), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def register(name: str, directory: Path) -> None:
    """Record that lab ``name`` lives in ``directory`` (atomically: readers see the old entry or the new one).

    Call it holding :func:`locked`.
    """
    _check_name(name)
    root = _root(create=True)
    assert root is not None
    entry = root / (name + _ENTRY_SUFFIX)
    tmp = root / f".{name}.{os.getpid()}.tmp"
    data = json.dumps({"name": name, "directory": str(Path(directory).absolute())}) + "\n"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(data)
        os.replace(tmp, entry)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def lookup(name: str) -> Path | None:
    """The directory recorded for lab ``name``, or None if no lab of that name is registered."""
    _check_name(name)
    root = _root(create=False)
    if root is None:
        return None
    return _read(root / (name + _ENTRY_SUFFIX))


def unregister(name: str, directory: Path) -> None:
    """Forget lab ``name`` if it is recorded at ``directory`` (a lab of that name elsewhere stays).

    Call it holding :func:`locked`.
    """
    _check_name(name)
    root = _root(create=False)
    if root is None:
        return
    entry = root / (name + _ENTRY_SUFFIX)
    if _read(entry) == Path(directory).absolute():
        entry.unlink(missing_ok=True)


def entries() -> dict[str, Path]:
    """Every registered lab: name → directory, sorted by name."""
    root = _root(create=False)
    if root is None:
        return {}
    found = {}
    for entry in sorted(root.glob("*" + _ENTRY_SUFFIX)):
        name = entry.name.removesuffix(_ENTRY_SUFFIX)
        directory = _read(entry) if _NAME_RE.match(name) else None
        if directory is not None:
            found[name] = directory
    return found


def _read(entry: Path) -> Path | None:
    try:
        data = json.loads(entry.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise LabError(f"lab registry entry {entry}: cannot read it: {err}") from err
    directory = data.get("directory") if isinstance(data, dict) else None
    if not isinstance(directory, str) or not os.path.isabs(directory):
        raise LabError(f"lab registry entry {entry}: no absolute 'directory' in it")
    return Path(directory)
