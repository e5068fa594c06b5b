"""Tearing hosts down: recorded processes killed (never by name), cgroup trees removed, mounts checked."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from pytest_mh_ansible._private.lab.process import ProcessId, wait_dead
from pytest_mh_ansible._private.lab.state import LabState
from pytest_mh_ansible.errors import LabError

__all__ = ["mounts_under", "remove_cgroups", "stop_hosts"]


def stop_hosts(state: LabState, timeout: float = 10.0) -> list[Exception]:
    """SIGKILL each host's recorded PID 1 and launcher, and wait until they are gone or zombies.

    Killing PID 1 makes the kernel kill every process of its PID namespace; the launcher
    (``unshare --kill-child``) is killed too, in case PID 1 was never recorded. Start times are
    checked, so a PID recycled since ``up`` is never touched.
    """
    processes: list[ProcessId] = []
    for host in state.hosts:
        for proc in (host.pid1, host.launcher):
            if proc is not None:
                proc.kill()
                processes.append(proc)
    remaining = wait_dead(processes, timeout=timeout)
    return [LabError(f"lab {state.name!r}: process {p.pid} still runs {timeout:g} s after SIGKILL") for p in remaining]


def remove_cgroups(state: LabState) -> list[Exception]:
    """Remove the systemd hosts' cgroup trees (systemd created sub-cgroups in them) and the lab's cgroup."""
    errors: list[Exception] = []
    paths = [Path(h.cgroup) for h in state.hosts if h.cgroup]
    if state.cgroup:
        paths.append(Path(state.cgroup))
    for path in paths:
        try:
            _rmdir_tree(path)
        except OSError as err:
            errors.append(LabError(f"lab {state.name!r}: cannot remove cgroup {path}: {err}"))
    return errors


def _rmdir_tree(path: Path, timeout: float = 5.0) -> None:
    """cgroup directories are removed with rmdir, bottom-up; one is busy until its dying processes left."""
    if not path.exists():
        return
    deadline = time.monotonic() + timeout
    subdirs = sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
    for directory in [*subdirs, path]:
        while True:
            try:
                directory.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.02)


def mounts_under(directory: Path) -> Sequence[str]:
    """Mount points of this (the machine's) mount namespace at or below ``directory``."""
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return [p for p in points if Path(p).is_relative_to(directory)]
