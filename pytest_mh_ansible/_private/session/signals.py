"""Ctrl-C and per-test timeouts: stop the running test, let every teardown run, and never hang."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, final

from ...errors import MultihostError

__all__ = ["Interrupts", "TestTimeoutError", "TestTimer"]

INTERRUPTED_EXIT = 2
"""pytest's exit code for an interrupted run (``pytest.ExitCode.INTERRUPTED``)."""


class TestTimeoutError(MultihostError):
    """A test on hosts ran longer than its ``--mh-timeout`` or ``@pytest.mark.mh_timeout``.

    :param nodeid: The test.
    :param seconds: Its time limit.
    """

    __test__ = False  # not a test class, whatever pytest's python_classes say

    def __init__(self, nodeid: str, seconds: float) -> None:
        super().__init__(
            f"{nodeid}: timed out after {seconds:g} s (mh_timeout); the test was stopped, its teardown and rollback ran"
        )
        self.nodeid = nodeid
        self.seconds = seconds


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@final
class Interrupts:
    """The first Ctrl-C stops the running test (teardowns still run); the second exits at once.

    pytest turns the first ``KeyboardInterrupt`` into an interrupted session and still runs the
    remaining fixture finalizers and ``pytest_sessionfinish``, where hosts are torn down. A
    second Ctrl-C during that teardown would leave a host half restored, so it is reported and
    the process ends at once (``os._exit``) rather than unwinding further.

    :param say: Prints a line on the terminal (bypassing output capture).
    """

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._previous: Any = None
        self._installed = False
        self.count = 0

    def install(self) -> None:
        if self._installed or not _main_thread():
            return
        self._previous = signal.signal(signal.SIGINT, self._handle)
        self._installed = True

    def uninstall(self) -> None:
        if self._installed and _main_thread():
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count == 1:
            self._say(
                "pytest-mh-ansible: interrupted: stopping the running test; its teardown, the rollback and the "
                "host teardown still run (press Ctrl-C again to exit at once)"
            )
            _kill_children(frame)
            raise KeyboardInterrupt
        self._say("pytest-mh-ansible: interrupted again: exiting now; hosts may be left with changes not rolled back")
        os._exit(INTERRUPTED_EXIT)


@final
class TestTimer:
    """A SIGALRM timer around the call of one test; its handler raises :class:`TestTimeoutError`.

    It stays out of the way of other users of SIGALRM (such as pytest-timeout): when another
    handler is installed or an alarm is pending, :meth:`start` does nothing and says so.
    """

    __test__ = False

    def __init__(self) -> None:
        self._running: tuple[str, float] | None = None
        self._previous: Any = None

    @staticmethod
    def available() -> str | None:
        """Why the timer cannot run here, or None."""
        if not hasattr(signal, "SIGALRM"):
            return "this platform has no SIGALRM"
        if not _main_thread():
            return "the test does not run in the main thread"
        if signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, signal.SIG_IGN, None):
            return "SIGALRM is in use by another plugin (pytest-timeout?)"
        if signal.getitimer(signal.ITIMER_REAL)[0]:
            return "an alarm is already pending"
        return None

    def start(self, nodeid: str, seconds: float) -> str | None:
        """Arm the timer for test ``nodeid``; None when armed, else why it was not."""
        why = self.available()
        if why is not None:
            return why
        self._running = (nodeid, seconds)
        self._previous = signal.signal(signal.SIGALRM, self._handle)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        return None

    def cancel(self) -> None:
        if self._running is None:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._previous)
        self._running = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        running, self._running = self._running, None
        signal.signal(signal.SIGALRM, self._previous)
        if running is not None:
            _kill_children(frame)
            raise TestTimeoutError(*running)


def _kill_children(frame: FrameType | None) -> None:
    """Kill the child processes (an ssh client, a local command) that the interrupted code waits for.

    Nobody would wait for them after the exception; the transport reaps them, and a killed one at once.
    """
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, subprocess.Popen) and value.returncode is None:
                with contextlib.suppress(OSError):
                    value.kill()
        frame = frame.f_back
