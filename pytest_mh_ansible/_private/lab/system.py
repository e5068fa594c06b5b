"""Running the machine's tools for the lab, and checking up front that the machine can host a lab."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from pytest_mh_ansible.errors import LabError

__all__ = ["REQUIRED_TOOLS", "SYSTEMD", "cgroup2_root", "check_machine", "check_systemd", "own_cgroup2_path", "run"]

# Tool -> the Debian package that provides it, so that the error can say what to install.
REQUIRED_TOOLS: Final = {
    "ip": "iproute2",
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "mount": "mount",
    "ssh-keygen": "openssh-client",
    "/usr/sbin/sshd": "openssh-server",
    "/usr/bin/python3": "python3",
}
SYSTEMD: Final = "/lib/systemd/systemd"


def run(argv: Sequence[str], *, what: str, input: str | None = None, check: bool = True) -> str:
    """Run a command and return its stdout; a failure becomes a LabError saying what was being done."""
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, input=input, check=False)
    except OSError as err:
        raise LabError(f"{what}: cannot run {argv[0]!r}: {err.strerror}") from err
    if check and proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()
        raise LabError(f"{what}: {' '.join(argv)!r} exited with code {proc.returncode}: {detail}")
    return proc.stdout


def check_machine() -> None:
    """Fail early, with the fix in the message, if this machine cannot run a lab at all."""
    if os.geteuid() != 0:
        raise LabError("the lab needs root (network namespaces, mounts, veths): run it as root")
    for tool, package in REQUIRED_TOOLS.items():
        if shutil.which(tool) is None:
            raise LabError(
                f"the lab needs {tool!r}: install the Debian package {package!r} (apt-get install {package})"
            )
    filesystems = Path("/proc/filesystems").read_text()
    if "overlay" not in filesystems:
        raise LabError("the lab needs overlayfs, which this kernel does not offer (modprobe overlay)")
    for ns in ("net", "mnt", "pid", "uts", "ipc"):
        if not Path(f"/proc/self/ns/{ns}").exists():
            raise LabError(f"the lab needs {ns} namespaces, which this kernel does not offer")


def cgroup2_root() -> Path:
    """Where the machine's cgroup2 hierarchy is mounted (unified or hybrid layout)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] == "cgroup2":
            return Path(left.split()[4])
    raise LabError("systemd hosts need a cgroup2 hierarchy, and none is mounted on this machine")


def own_cgroup2_path() -> str:
    """This process's cgroup2 path (relative to the hierarchy's root)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return line[3:].strip() or "/"
    return "/"


def check_systemd() -> None:
    """systemd hosts run the machine's own systemd binary, which may not be installed."""
    if not Path(SYSTEMD).exists():
        raise LabError(f"systemd hosts need {SYSTEMD}: install the Debian package 'systemd' (apt-get install systemd)")
    if not Path("/proc/self/ns/cgroup").exists():
        raise LabError("systemd hosts need cgroup namespaces, which this kernel does not offer")
    cgroup2_root()
