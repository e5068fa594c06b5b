"""Host processes: launching a host's PID 1 in its namespaces, finding, checking and killing recorded PIDs."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import final

from pytest_mh_ansible.errors import LabError

__all__ = ["ProcessId", "launch", "wait_dead", "wait_for_child", "wait_for_port"]

_DEVNULL = os.devnull


@final
@dataclass(frozen=True)
class ProcessId:
    """A PID together with its start time, so that a recycled PID is never mistaken for ours."""

    pid: int
    start: int

    @classmethod
    def of(cls, pid: int) -> ProcessId:
        start = _start_time(pid)
        if start is None:
            raise LabError(f"process {pid} vanished before it could be recorded")
        return cls(pid, start)

    def state(self) -> str | None:
        """The process state letter (``R``, ``S``, ``Z``, ...), or ``None`` if it is gone or not ours."""
        fields = _stat_fields(self.pid)
        if fields is None or int(fields[19]) != self.start:
            return None
        return fields[0]

    @property
    def alive(self) -> bool:
        """Running: exists, is ours, and is not a zombie (``kill -0`` would say yes to a zombie)."""
        return self.state() not in (None, "Z", "X")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)
        self.reap()

    def reap(self) -> None:
        """Wait for it if it is our own child (it is when up and down run in one process)."""
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, os.WNOHANG)


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name may hold spaces and parentheses: fields start after the last ')'.
    return text[text.rindex(")") + 2 :].split()


def _start_time(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[19])


def launch(argv: list[str], log: Path) -> ProcessId:
    """Start a detached process (own session, stdio to ``log``) and return its recorded id.

    posix_spawn rather than subprocess.Popen: the host outlives this process, and a Popen object
    would complain when collected while its process still runs.
    """
    with open(log, "ab") as out:
        fd = out.fileno()
        pid = os.posix_spawn(
            argv[0],
            argv,
            {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, _DEVNULL, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, fd, 1),
                (os.POSIX_SPAWN_DUP2, fd, 2),
            ],
            setsid=True,
        )
    return ProcessId.of(pid)


def wait_for_child(parent: ProcessId, timeout: float) -> ProcessId:
    """The first child of ``parent`` (the host's PID 1 under ``unshare --fork``)."""
    deadline = time.monotonic() + timeout
    children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children")
    while time.monotonic() < deadline:
        try:
            pids = children.read_text().split()
        except (FileNotFoundError, ProcessLookupError):
            pids = []
        if pids:
            return ProcessId.of(int(pids[0]))
        if not parent.alive:
            break
        time.sleep(0.005)
    raise LabError(f"process {parent.pid} did not start its child (the host's PID 1) within {timeout:g} s")


def wait_for_port(address: str, port: int, deadline: float, alive: ProcessId) -> bool:
    """Poll until ``address:port`` accepts a TCP connection; False once ``alive`` dies or time is up."""
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((address, port), timeout=0.5):
                return True
        except OSError:
            if not alive.alive:
                return False
            time.sleep(0.01)
    return False


def wait_dead(processes: list[ProcessId], timeout: float) -> list[ProcessId]:
    """Wait until each process is gone or a zombie; returns those still running after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        for proc in processes:
            proc.reap()
        remaining = [p for p in processes if p.alive]
        if not remaining or time.monotonic() >= deadline:
            return remaining
        time.sleep(0.01)
