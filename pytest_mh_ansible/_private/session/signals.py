"""Ctrl-C, SIGTERM, SIGHUP and per-test timeouts: stop the running test, let every teardown run, never hang."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any, final

from ...errors import MultihostError
from ..ansible import control_dirs

__all__ = ["Interrupts", "SignalRelay", "TestTimeoutError", "TestTimer"]

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


SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
"""The signals that end a run the way Ctrl-C does (those this platform has)."""

DUPLICATE_WINDOW = 1.0
"""Seconds within which a second SIGTERM/SIGHUP counts as the same ending, not as "again".

A closed terminal sends SIGHUP to the whole process group and pytest-xdist's controller passes
the signal on to its workers too: a worker may get the same ending twice within milliseconds.
In an xdist worker this holds for SIGINT too (Ctrl-C reaches the worker from the terminal and
from the controller); in a run without xdist a quick second Ctrl-C still means "exit now".
"""


def _signals() -> list[signal.Signals]:
    return [getattr(signal, name) for name in SIGNALS if hasattr(signal, name)]


class _SignalHandler:
    """Handles the signals of :data:`SIGNALS` from :meth:`install` on; :meth:`uninstall` puts back those it replaced.

    Only the main thread can set signal handlers; elsewhere both do nothing. A subclass says what
    a signal does in :meth:`_handle`.
    """

    def __init__(self) -> None:
        self._previous: dict[signal.Signals, Any] = {}

    def install(self) -> None:
        if self._previous or not _main_thread():
            return
        for signum in _signals():
            self._previous[signum] = signal.signal(signum, self._handle)

    def uninstall(self) -> None:
        if self._previous and _main_thread():
            for signum, previous in self._previous.items():
                signal.signal(signum, previous)
            self._previous = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        raise NotImplementedError


@final
class Interrupts(_SignalHandler):
    """SIGINT (Ctrl-C), SIGTERM and SIGHUP stop the running test (teardowns run); a second one exits at once.

    The first signal during a test's setup or call raises ``KeyboardInterrupt`` there: pytest
    turns it into an interrupted session and still runs the remaining fixture finalizers and
    ``pytest_sessionfinish``, where the rollback and the host teardown run. A first signal that
    comes while a teardown or the rollback runs does not interrupt it: the run stops once it is
    done (``session.shouldstop``). A second signal exits at once (``os._exit``) and lists the
    changes that are left on the hosts (``pending``).

    An in-flight module call is abandoned: its process on the host is killed with its channel, and
    its inverse is recorded as if it had changed the host (see :class:`~pytest_mh_ansible.modules.ChangeRecorder`).

    :param say: Prints a line on the terminal (bypassing output capture).
    :param pending: The changes not reverted yet, one line each.
    :param relayed: This process is a pytest-xdist worker, whose controller passes signals on
        (:class:`SignalRelay`): a repeat of the first signal within :data:`DUPLICATE_WINDOW`
        is the same ending, SIGINT included.
    """

    def __init__(
        self, say: Callable[[str], None], pending: Callable[[], list[str]] = list, *, relayed: bool = False
    ) -> None:
        self._say = say
        self._pending = pending
        self._relayed = relayed
        super().__init__()
        self._first_at = 0.0
        self._first: signal.Signals | None = None
        self.count = 0
        self.test: str | None = None
        """The node id of the test that runs (set by the plugin), for the message."""
        self.tearing_down = False
        """True while teardown or the rollback runs: a first signal then waits for them to end."""
        self.session: Any = None
        """The pytest session, whose ``shouldstop`` a deferred stop sets."""

    @property
    def received(self) -> str | None:
        """The name of the first signal received, or None."""
        return self._first.name if self._first is not None else None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        sig = signal.Signals(signum)
        now = time.monotonic()
        repeat = self.count and sig == self._first and now - self._first_at < DUPLICATE_WINDOW
        if repeat and (sig != signal.SIGINT or self._relayed):
            return  # the same ending delivered twice (process group and xdist controller)
        self.count += 1
        if self.count == 1:
            self._first, self._first_at = sig, now
            where = f" during {self.test}" if self.test else ""
            again = _again(sig)
            if self.tearing_down:
                self._say(
                    f"pytest-mh-ansible: {sig.name} received{where}: the teardown and the rollback that run now "
                    f"finish, then the run stops ({again} to exit at once)"
                )
                if self.session is not None:
                    self.session.shouldstop = f"pytest-mh-ansible: {sig.name} received"
                return
            self._say(
                f"pytest-mh-ansible: {sig.name} received{where}: stopping the test; its teardown, the rollback and "
                f"the host teardown still run ({again} to exit at once)"
            )
            _kill_children(frame)
            raise KeyboardInterrupt
        lines = self._safe_pending()
        self._say(
            f"pytest-mh-ansible: {sig.name} received again: exiting now; "
            + (f"{len(lines)} change(s) NOT reverted:" if lines else "no recorded change is left to revert")
        )
        for line in lines:
            self._say(f"  not reverted: {line}")
        _exit_now()

    def _safe_pending(self) -> list[str]:
        try:
            return list(self._pending())
        except Exception as err:  # never let the listing stop the exit
            return [f"(the list of changes could not be read: {err})"]


@final
class SignalRelay(_SignalHandler):
    """pytest-xdist's controller: SIGINT, SIGTERM and SIGHUP are passed on to every worker, each of which rolls back.

    The controller runs no test and holds no change; it keeps running until the workers have
    finished their teardown and rollback (xdist then ends the run as interrupted). Were it to
    stop at the signal, as it does by default on Ctrl-C, it would end its workers' gateways
    while they still roll back: execnet interrupts a worker that is still busy after 5 s and
    kills it after 15 s, and changes stay on the hosts. A second signal is passed on too (the
    workers exit at once, listing what they leave), then the controller exits.

    SIGINT is passed on although Ctrl-C in a terminal reaches the workers already (they are in
    its process group): a ``kill -INT`` of the controller alone must stop them too, and a worker
    takes the same signal twice within :data:`DUPLICATE_WINDOW` for one (``Interrupts(relayed=True)``).
    Before any worker is up, SIGINT interrupts the controller as usual.

    :param say: Prints a line on the terminal.
    """

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        super().__init__()
        self.workers: dict[str, int] = {}
        """Worker id → pid."""
        self._first: tuple[signal.Signals, float] | None = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        sig = signal.Signals(signum)
        now = time.monotonic()
        first = self._first
        if first is not None and first[0] == sig and now - first[1] < DUPLICATE_WINDOW:
            return
        if first is None and sig == signal.SIGINT and not self.workers:
            raise KeyboardInterrupt  # no worker to wait for: Ctrl-C stops the controller as usual
        for pid in self.workers.values():
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        names = ", ".join(sorted(self.workers)) or "none running"
        if first is None:
            self._first = (sig, now)
            self._say(
                f"pytest-mh-ansible: {sig.name} received: passed on to the workers ({names}); each stops its test, "
                f"runs its teardown and rollback ({_again(sig)} to exit at once)"
            )
            return
        self._say(f"pytest-mh-ansible: {sig.name} received again: passed on to the workers ({names}); exiting now")
        _exit_now()


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


def _again(sig: signal.Signals) -> str:
    """How the user ends the run at once: the words of the first signal's message."""
    return "press Ctrl-C again" if sig == signal.SIGINT else f"send {sig.name} again"


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


def _exit_now() -> None:
    """Exit at once (no teardown, no atexit), after writing out what was said: os._exit drops buffered output.

    No transport is closed: the private ControlPath directories they made are removed here.
    """
    with contextlib.suppress(Exception):
        control_dirs.remove_all()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    os._exit(INTERRUPTED_EXIT)
