"""Artifacts: which files each host, role and utility asks for, and fetching them from the host."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
import shutil
import tarfile
import tempfile
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..options import option_or_ini

if TYPE_CHECKING:
    from ...host import MultihostHost

__all__ = ["PHASES", "artifact_patterns", "artifacts_root", "fetch_artifacts", "test_directory", "utility_patterns"]

log = logging.getLogger("pytest_mh_ansible.artifacts")

PHASES = ("session_setup", "session_teardown", "topology_setup", "topology_teardown", "test")
"""The phases an ``artifacts`` mapping may name."""

_GLOB_CHARS = frozenset("*?[]")
_PLAIN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+,:@%=")
_UNSAFE_RE = re.compile(r"[\x00-\x1f/\\]")


_PYTEST_MH_TYPES = {"session_setup": "pytest_setup", "session_teardown": "pytest_teardown"}
"""pytest-mh's names of the session phases, which ``get_artifacts_list`` receives."""


def artifact_patterns(source: object, phase: str, host: object = None) -> list[str]:
    """The paths and globs that ``source`` (a host, role, utility or controller) asks for in ``phase`` on ``host``.

    A source with pytest-mh's ``get_artifacts_list(host, artifacts_type)`` is asked through it
    (``host`` defaults to the source's own ``host``, else the source itself; the session phases
    are named ``pytest_setup``/``pytest_teardown`` there); a failing call is logged and asks for
    nothing, so that it never hides the test's own outcome. Otherwise ``source.artifacts`` may be
    missing or None (nothing), a string (one path), an iterable of paths (every phase) or a mapping
    from phase to paths. A property may compute it.
    """
    lister = getattr(source, "get_artifacts_list", None)
    if callable(lister):
        target = host if host is not None else getattr(source, "host", source)
        try:
            listed = lister(target, _PYTEST_MH_TYPES.get(phase, phase))
        except Exception as err:
            log.warning(
                "%r: get_artifacts_list(%r, %r) failed, nothing collected from it: %s", source, target, phase, err
            )
            return []
        if isinstance(listed, str):
            return [listed]
        return sorted(str(item) for item in listed or () if item)
    value: Any = getattr(source, "artifacts", None)
    if value is None:
        return []
    if isinstance(value, Mapping):
        # a host file's pytest_setup/pytest_teardown (convert-mhc, --mh-config) are the session phases
        value = value.get(phase) or value.get(_PYTEST_MH_TYPES.get(phase, phase)) or []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable):
        return [str(item) for item in value if item]
    return []


def utility_patterns(owner: object, phase: str, host: object = None) -> list[str]:
    """The artifacts of the utilities ``owner`` (a host or role) holds as attributes, created ones only."""
    from ...utility import MultihostUtility

    found: list[str] = []
    for value in list(vars(owner).values()):
        if isinstance(value, MultihostUtility):
            found += artifact_patterns(value, phase, host)
    return found


def artifacts_root(config: pytest.Config) -> Path:
    """The artifacts directory: ``--mh-artifacts-dir`` or ``mh_artifacts_dir``, relative to the invocation directory."""
    root = Path(option_or_ini(config, "mh_artifacts_dir", "artifacts"))
    return root if root.is_absolute() else config.invocation_params.dir / root


def test_directory(nodeid: str) -> Path:
    """Where a test's artifacts go, relative to the artifacts directory, from its node id.

    ``tests/web/test_app.py::TestX::test_a[client-server]`` gives
    ``tests/tests/web/test_app/TestX/test_a[client-server]``: tests of the same name in other
    modules or classes never share a directory.
    """
    module, _, rest = nodeid.partition("::")
    if module.endswith(".py"):
        module = module[:-3]
    parts = [_safe(part) for part in module.split("/") if part]
    parts += [_safe(part) for part in rest.split("::") if part]
    return Path("tests", *parts)


def _safe(part: str) -> str:
    """One path component: no separators or control characters, never ``.`` or ``..``."""
    part = _UNSAFE_RE.sub("_", part)
    return "_" * len(part) if part in (".", "..") else part


def _shell_glob(pattern: str) -> str:
    """``pattern`` for a shell word: glob characters stay active, every other special character is literal."""
    return "".join(char if char in _GLOB_CHARS or char in _PLAIN_CHARS else "\\" + char for char in pattern)


def _collect_script(patterns: Iterable[str], archive: str) -> str:
    """A /bin/sh script that expands the globs on the target and archives what exists into ``archive``.

    Unmatched globs and missing paths are skipped; tar's status 1 (a file changed while read, as a
    growing log does) is fine. The script prints ``count=N`` (0: no archive was made).
    """
    words = " ".join(_shell_glob(p) for p in patterns)
    out = shlex.quote(archive)
    return (
        f"umask 077; n=0; : > {out}.list || exit 3\n"
        f"for f in {words}; do case $f in /*) ;; *) f=$PWD/$f ;; esac; "
        f'if [ -e "$f" ] || [ -L "$f" ]; then printf "%s\\n" "${{f#/}}" >> {out}.list; n=$((n+1)); fi; done\n'
        f"if [ $n -gt 0 ]; then tar -czhf {out} -C / --ignore-failed-read --verbatim-files-from -T {out}.list "
        f"2>/dev/null; rc=$?; [ $rc -le 1 ] || {{ rm -f {out}.list {out}; echo tar: rc=$rc >&2; exit 4; }}; "
        # 0600, owned by the login user when the script ran through sudo: it fetches the file, nobody else reads it
        f'chmod 0600 {out}; if [ -n "${{SUDO_UID:-}}" ]; then chown "$SUDO_UID" {out}; fi; fi\n'
        f"rm -f {out}.list; echo count=$n"
    )


def fetch_artifacts(host: MultihostHost, patterns: Iterable[str], destination: Path, *, compress: bool) -> int:
    """Fetch the files and directories matching ``patterns`` from ``host`` into ``destination``.

    Globs are expanded on the host; directories are fetched recursively; missing paths are
    ignored. A file lands at ``destination/<its absolute path on the host>``; with ``compress``
    the host's files stay in one archive, ``destination.tar.gz``.

    :returns: How many paths matched (0: nothing was written).
    :raises MultihostError: The host could not archive or send the files.
    """
    wanted = [p for p in dict.fromkeys(patterns) if "\n" not in p]
    if not wanted:
        return 0
    remote = f"/tmp/mh-artifacts-{uuid.uuid4().hex}.tar.gz"
    conn = host.conn
    try:
        result = conn.run(_collect_script(wanted, remote), timeout=300)
        count = int(result.stdout.strip().rpartition("count=")[2] or 0)
        if count == 0:
            return 0
        with tempfile.TemporaryDirectory(prefix="mh-artifacts-") as tmp:
            local = Path(tmp) / "artifacts.tar.gz"
            conn.get(remote, local)
            destination.parent.mkdir(parents=True, exist_ok=True)
            if compress:
                tarball = destination.with_name(destination.name + ".tar.gz")
                shutil.move(local, tarball)
                os.chmod(tarball, 0o600)  # the host's files (logs, configs) are not for every local user
            else:
                destination.mkdir(parents=True, exist_ok=True)
                with tarfile.open(local, "r:gz") as archive:
                    _extract(archive, destination)
        return count
    finally:
        with contextlib.suppress(Exception):  # the fetch's own error (if any) is the one to report
            conn.run(f"rm -f {shlex.quote(remote)}", raise_on_error=False, timeout=60)


def _extract(archive: tarfile.TarFile, destination: Path) -> None:
    """Unpack a host's archive with tarfile's ``data`` filter: nothing outside ``destination``, no devices.

    Python 3.11.0-3.11.3 (Debian 12's 3.11.2 among them) lack extraction filters; there, only
    regular files, directories and links that stay inside ``destination`` are unpacked.
    """
    if hasattr(tarfile, "data_filter"):
        archive.extractall(destination, filter="data")
        return
    root = destination.resolve()
    safe = []
    for member in archive.getmembers():
        target = (root / member.name).resolve()
        if root not in (target, *target.parents) or not (member.isfile() or member.isdir() or member.issym()):
            continue
        if member.issym() and root not in (link := (target.parent / member.linkname).resolve(), *link.parents):
            continue
        member.mode &= 0o755
        safe.append(member)
    if hasattr(tarfile, "fully_trusted_filter"):
        # The members were vetted above; saying so keeps Python 3.12+ from warning about a missing filter.
        archive.extractall(destination, members=safe, filter="fully_trusted")
    else:
        archive.extractall(destination, members=safe)
