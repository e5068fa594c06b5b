"""The offline package cache: .deb files downloaded on the machine, hard-linked into the hosts' apt archives."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_mh_ansible._private.local_files import open_private, private_dir
from pytest_mh_ansible.errors import LabError

__all__ = ["ensure_packages"]

_NOT_FOUND = ("Unable to locate package", "has no installation candidate", "is not available")


def _download(packages: Sequence[str], cache: Path) -> subprocess.CompletedProcess[str]:
    # Resolution runs against the machine's installed set, which is exactly the hosts' starting set
    # (their lower layer is the machine's /). Nothing is installed and no daemon is started here.
    argv = [
        "apt-get",
        "install",
        "--download-only",
        "--yes",
        "-o",
        f"Dir::Cache::archives={cache}",
        "-o",
        "APT::Keep-Downloaded-Packages=true",
        *packages,
    ]
    return subprocess.run(
        argv, check=False, capture_output=True, text=True, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    )


def ensure_packages(packages: Sequence[str], cache: Path) -> list[Path]:
    """Make ``packages`` installable offline in the hosts; returns every cached .deb.

    Inside a host, apt finds the files already in ``/var/cache/apt/archives`` and so needs no network,
    with the machine's own package lists (``apt-get update`` is run on the machine only if a package
    is unknown to them).

    :raises LabError: A package does not exist or cannot be downloaded.
    """
    for directory in (cache.parent, cache):
        private_dir(directory, 0o755)  # the .debs are installed as root in the hosts
    # apt's own download area: apt hands it to its sandbox user (_apt), so it is not ours to check
    (cache / "partial").mkdir(mode=0o700, exist_ok=True)
    with os.fdopen(open_private(cache.parent / "debs.lock", os.O_WRONLY | os.O_CREAT, 0o600), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if packages:
            proc = _download(packages, cache)
            if proc.returncode != 0 and any(marker in proc.stderr for marker in _NOT_FOUND):
                print(
                    f"pytest-mh-ansible lab: packages {' '.join(packages)} not found in the machine's apt lists; "
                    "running 'apt-get update' on the machine",
                    file=sys.stderr,
                )
                subprocess.run(["apt-get", "update"], capture_output=True, text=True, check=False)
                proc = _download(packages, cache)
            if proc.returncode != 0:
                raise LabError(
                    f"cannot download packages {list(packages)!r} into {cache} "
                    f"(apt-get exited with {proc.returncode}): {proc.stderr.strip()[-2000:]}"
                )
    return sorted(cache.glob("*.deb"))
