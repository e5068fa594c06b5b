"""Per-test logs and the combined log file: every command, playbook and rollback line, host-tagged and masked."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import IO, final

from ..secrets import secrets

__all__ = ["LOGGER", "LogTap"]

LOGGER = "pytest_mh_ansible"
"""The parent of the plugin's loggers (``.conn``, ``.playbook``, ``.rollback``, ``.artifacts``)."""


def _split_host(record: logging.LogRecord) -> tuple[str, str]:
    """The host a record is about and its message without the host prefix the plugin's loggers put first."""
    message = record.getMessage()
    host = getattr(record, "mh_host", None)
    if host is not None:
        return str(host), message
    args = record.args
    if isinstance(args, tuple) and args and isinstance(args[0], str) and isinstance(record.msg, str):
        name = args[0]
        if record.msg.startswith("%s: ") and message.startswith(f"{name}: "):
            return name, message[len(name) + 2 :]
        if record.msg.startswith("[%s] ") and message.startswith(f"[{name}] "):
            return name, message[len(name) + 3 :]
        if record.name == f"{LOGGER}.modules" and record.msg.startswith("%s ") and message.startswith(f"{name} "):
            return name, message[len(name) + 1 :]  # "client1 ansible.builtin.copy {...} -> changed (12 ms)"
    return "-", message


@final
class HostFormatter(logging.Formatter):
    """``12:00:01.123 DEBUG   [client1] conn: cat /etc/hostname -> rc=0 in 0.004 s``, secrets masked."""

    def format(self, record: logging.LogRecord) -> str:
        host, message = _split_host(record)
        stamp = f"{self.formatTime(record, '%H:%M:%S')}.{int(record.msecs):03d}"
        name = record.name.removeprefix(LOGGER + ".") if record.name != LOGGER else "mh"
        line = f"{stamp} {record.levelname:<7} [{host}] {name}: {message}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return secrets.mask(line)


class _Forward(logging.Handler):
    """Hands a record on to the root logger's handlers only if its logger would have let it through.

    The plugin's loggers are turned to DEBUG for the per-test logs; this keeps pytest's console,
    ``log_cli`` and captured-log sections exactly as the user's log levels say. A root handler that
    is attached to the plugin's logger as well (pytest attaches its capture handlers to loggers
    that do not propagate) has the record already: it is not handed it twice.
    """

    def __init__(self, tap: LogTap) -> None:
        super().__init__(logging.NOTSET)
        self._tap = tap

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno < self._tap.natural_level(record.name):
            return
        root = logging.getLogger()
        if root.disabled or not root.filter(record):
            return
        own = set(logging.getLogger(LOGGER).handlers)
        for handler in root.handlers:
            if handler not in own and record.levelno >= handler.level:
                handler.handle(record)


class _Capture(logging.Handler):
    def __init__(self, tap: LogTap) -> None:
        super().__init__(logging.DEBUG)
        self._tap = tap
        self.setFormatter(HostFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._tap.write(self.format(record))
        except Exception:  # pragma: no cover - logging must never break a test
            self.handleError(record)


@final
class LogTap:
    """Taps the plugin's loggers at DEBUG: into the running test's buffer and the combined log file.

    Example::

        tap = LogTap(combined=Path("mh.log"))
        tap.install()
        tap.begin("tests/test_a.py::test_a[client]")
        ...
        lines = tap.end()
        tap.uninstall()
    """

    def __init__(self, combined: Path | None = None) -> None:
        self._combined_path = combined
        self._combined: IO[str] | None = None
        self._buffer: list[str] | None = None
        self._lock = threading.Lock()
        self._logger = logging.getLogger(LOGGER)
        self._saved: tuple[int, bool] | None = None
        self._handlers: list[logging.Handler] = []

    def natural_level(self, name: str) -> int:
        """The level logger ``name`` would have without the tap (its own, a parent's or the root's)."""
        logger: logging.Logger | None = logging.getLogger(name)
        while logger is not None:
            level = self._saved[0] if logger is self._logger and self._saved is not None else logger.level
            if level:
                return level
            logger = logger.parent
        return logging.getLogger().getEffectiveLevel()

    def install(self) -> None:
        if self._saved is not None:
            return
        if self._combined_path is not None:
            self._combined_path.parent.mkdir(parents=True, exist_ok=True)
            self._combined = open(self._combined_path, "a", encoding="utf-8")  # noqa: SIM115 - kept for the session
        self._saved = (self._logger.level, self._logger.propagate)
        self._handlers = [_Forward(self), _Capture(self)]
        for handler in self._handlers:
            self._logger.addHandler(handler)
        self._logger.setLevel(logging.DEBUG)
        self._logger.propagate = False

    def uninstall(self) -> None:
        if self._saved is None:
            return
        for handler in self._handlers:
            self._logger.removeHandler(handler)
        self._logger.setLevel(self._saved[0])
        self._logger.propagate = self._saved[1]
        self._saved = None
        with self._lock:
            if self._combined is not None:
                self._combined.close()
                self._combined = None

    def write(self, line: str) -> None:
        """Add a (masked) line to the running test's log and the combined log."""
        with self._lock:
            if self._buffer is not None:
                self._buffer.append(line)
            if self._combined is not None:
                self._combined.write(line + "\n")
                self._combined.flush()

    def mark(self, text: str) -> None:
        """A section line (``===== setup: tests/x.py::test_a[client] =====``) in both logs."""
        self.write(secrets.mask(f"===== {text} ====="))

    def begin(self, nodeid: str) -> None:
        """Start the log of test ``nodeid``."""
        with self._lock:
            self._buffer = []
        self.mark(f"test {nodeid}")

    def end(self) -> list[str]:
        """End the running test's log; its lines."""
        with self._lock:
            lines, self._buffer = self._buffer or [], None
        return lines
