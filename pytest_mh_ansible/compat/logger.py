"""``MultihostLogger``: pytest-mh's logger (a ``logging.Logger``) of the session, hosts, roles and utilities.

Its records go through Python's logging under ``pytest_mh_ansible.compat``, so pytest's log capture,
``--mh-log-path`` and this project's per-test logs (``test.log`` in the artifacts) hold them.
pytest-mh's extras are kept: ``extra={"data": {...}}`` is written out below the message,
:meth:`MultihostLogger.phase` marks a phase, :meth:`MultihostLogger.colorize` colours text when
the log goes to a terminal, and :meth:`MultihostLogger.split`/:meth:`MultihostLogger.flush` write
the records of a phase into a file of the artifacts directory when the outcome asks for it.
"""

from __future__ import annotations

import logging
import textwrap
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["ROOT", "MultihostHostLogger", "MultihostLogger", "logger_for"]

ROOT = "pytest_mh_ansible.compat"
"""The parent of the layer's loggers; under the project's logger, so that its logs hold their records."""

_RESET = "\x1b[0m"


def _render(key: object, value: Any) -> str:
    """One entry of ``extra["data"]`` as text: a mapping or sequence one item a line below the key."""
    if isinstance(value, Mapping):
        return f"  {key}:" + "".join(f"\n    {name}: {item}" for name, item in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return f"  {key}:" + "".join(f"\n    - {item}" for item in value)
    text = str(value)
    return f"  {key}: {text}" if "\n" not in text else f"  {key}: |\n" + textwrap.indent(text, "    ")


class _PhaseBuffer(logging.Handler):
    """Keeps records in memory until :meth:`MultihostLogger.flush` writes them (or drops them)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.files: dict[Path, list[logging.LogRecord]] = {}
        self._buffer_lock = threading.Lock()
        self.setFormatter(logging.Formatter("%(levelname)-8s %(asctime)s %(host)s %(message)s", defaults={"host": ""}))

    def emit(self, record: logging.LogRecord) -> None:
        with self._buffer_lock:
            self.records.append(record)

    def split(self, path: Path) -> None:
        with self._buffer_lock:
            self.files.setdefault(path, []).extend(self.records)
            self.records = []

    def write(self) -> None:
        with self._buffer_lock:
            files, self.files = self.files, {}
        for path, records in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as out:
                out.writelines(self.format(record) + "\n" for record in records)

    def clear(self) -> None:
        with self._buffer_lock:
            self.records = []
            self.files = {}


class MultihostLogger(logging.Logger):
    """pytest-mh's logger: a ``logging.Logger`` with ``phase``, ``colorize``, ``split``, ``flush`` and data extras.

    Example::

        mh_logger.info("enrolled", extra={"data": {"Realm": realm, "Keytab": "/etc/krb5.keytab"}})
        mh_logger.phase("BEFORE RESTART")
        text = mh_logger.colorize("passed", colorama.Fore.GREEN)

    :ivar allow_colors: Whether :meth:`colorize` adds colours (set when the log goes to a terminal).
    :ivar log_path: Where :meth:`setup` sends records as well (``--mh-log-path``), or None.
    :ivar extra: Attributes added to every record (a host logger's ``host``).
    :ivar handler: The handler :meth:`setup` added, or None.
    :ivar artifacts_mode: When :meth:`flush` writes its files: never, on-failure or always.
    :ivar artifacts_dir: The directory :meth:`split` paths are relative to.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.allow_colors: bool = False
        self.log_path: str | None = None
        self.extra: dict[str, Any] = {}
        self.handler: logging.Handler | None = None
        self.artifacts_mode: str = "on-failure"
        self.artifacts_dir: Path = Path()

    @classmethod
    def GetLogger(cls, *, loggercls: type[MultihostLogger] | None = None, suffix: str | None = None) -> MultihostLogger:
        """The logger ``pytest_mh_ansible.compat.logger[.suffix]``, of class ``loggercls`` (default: this class).

        :raises ValueError: A logger of that name exists already with another class.
        """
        wanted = loggercls or cls
        name = f"{ROOT}.logger" + (f".{suffix}" if suffix else "")
        manager = logging.Logger.manager
        existing = manager.loggerDict.get(name)
        if isinstance(existing, logging.Logger):
            logger: logging.Logger = existing
        else:
            previous = manager.loggerClass
            manager.setLoggerClass(wanted)
            try:
                logger = manager.getLogger(name)
            finally:
                manager.loggerClass = previous
        if not isinstance(logger, wanted):
            raise ValueError(f"logger {name!r} is a {type(logger).__name__}, not a {wanted.__name__}")
        return logger

    def setup(self, **kwargs: Any) -> None:
        """Prepare the logger: pytest-mh's keywords ``log_path``, ``artifacts_mode``, ``artifacts_dir``, ``confdict``.

        With ``log_path`` records go to that file too (coloured when it is ``/dev/stdout`` or
        ``/dev/stderr``); without it they are kept for :meth:`split` and :meth:`flush`. They always
        reach Python's logging as well.
        """
        self.log_path = kwargs.get("log_path")
        self.artifacts_mode = str(kwargs.get("artifacts_mode") or "on-failure")
        self.artifacts_dir = Path(kwargs.get("artifacts_dir") or "")
        self.allow_colors = self.log_path in ("/dev/stdout", "/dev/stderr")
        if self.handler is not None:
            self.removeHandler(self.handler)
            self.handler.close()
        if self.log_path:
            handler: logging.Handler = logging.FileHandler(self.log_path)
            handler.setFormatter(
                logging.Formatter("%(levelname)-8s %(asctime)s %(host)s %(message)s", defaults={"host": ""})
            )
        else:
            handler = _PhaseBuffer()
        # The logger keeps its level unset: the project's logging settings decide, as for its own loggers.
        handler.setLevel(logging.DEBUG)
        self.handler = handler
        self.addHandler(handler)

    def subclass(self, cls: type[MultihostLogger], suffix: str, **kwargs: Any) -> MultihostLogger:
        """A child logger of class ``cls`` sharing this one's settings; ``kwargs`` go to its :meth:`setup`.

        The child has no handler of its own: its records reach this logger's through propagation.
        """
        logger = self.GetLogger(loggercls=cls, suffix=suffix)
        logger.handlers = []
        logger.filters = list(self.filters)
        logger.level = self.level
        logger.allow_colors = self.allow_colors
        logger.log_path = self.log_path
        logger.artifacts_mode = self.artifacts_mode
        logger.artifacts_dir = self.artifacts_dir
        logger.extra = dict(self.extra)
        logger.setup(**kwargs)
        return logger

    def colorize(self, text: str | Any, *colors: str) -> str:
        """``text`` between the ANSI ``colors`` (colorama's ``Fore``/``Back``/``Style`` values) when colours are on."""
        if not self.allow_colors or not colors:
            return str(text)
        return "".join(colors) + str(text) + _RESET

    def phase(self, phase: str) -> None:
        """Log the start or end of a phase (``SETUP``, ``TEST DONE``, ...) as a line of its own."""
        self.info(self.colorize(phase, "\x1b[1m"))

    def split(self, path: str | Path) -> None:
        """Move the records kept so far into file ``path`` (relative to ``artifacts_dir``), written by :meth:`flush`.

        Does nothing when the records go to ``log_path`` instead of being kept.
        """
        handler = self._buffer()
        if handler is not None:
            handler.split(self.artifacts_dir / Path(path))

    def flush(self, outcome: str = "unknown", path: str | Path | None = None) -> None:
        """Write the files of :meth:`split` if ``artifacts_mode`` wants them after ``outcome``, else drop them.

        Records kept but not split are dropped either way (the per-test log holds them already).

        :param outcome: ``passed``, ``failed``, ``skipped``, ``error`` or ``unknown``.
        :param path: Split the records kept so far into this file first.
        """
        from .artifacts import should_collect_artifacts

        if path is not None:
            self.split(path)
        handler = self._buffer()
        if handler is None:
            return
        if should_collect_artifacts(self.artifacts_mode, outcome):
            handler.write()
        handler.clear()

    def _buffer(self) -> _PhaseBuffer | None:
        logger: logging.Logger | None = self
        while logger is not None:
            if isinstance(logger, MultihostLogger) and isinstance(logger.handler, _PhaseBuffer):
                return logger.handler
            logger = logger.parent if logger.propagate else None
        return None

    def makeRecord(  # noqa: PLR0917 - logging's signature
        self,
        name: str,
        level: int,
        fn: str,
        lno: int,
        msg: object,
        args: Any,
        exc_info: Any,
        func: str | None = None,
        extra: Mapping[str, object] | None = None,
        sinfo: str | None = None,
    ) -> logging.LogRecord:
        """Every record gets :attr:`extra`, and ``extra["data"]`` written out below its message."""
        merged = {**self.extra, **(extra or {})}
        data = merged.get("data")
        if isinstance(data, Mapping) and data:
            text = str(msg) % args if args else str(msg)
            lines = [_render(key, value) for key, value in data.items()]
            msg, args = text + "\n" + "\n".join(lines), ()
        host = merged.get("host")
        if host and "mh_host" not in merged:
            merged["mh_host"] = host  # the per-test log's host column
        return super().makeRecord(name, level, fn, lno, msg, args, exc_info, func, merged or None, sinfo)


class MultihostHostLogger(MultihostLogger):
    """The logger of one host (pytest-mh's): every record names the host (``setup(hostname=...)``)."""

    def setup(self, **kwargs: Any) -> None:
        self.extra["host"] = kwargs["hostname"]


def logger_for(kind: str, host: str | None = None) -> MultihostLogger:
    """The logger of the layer's ``kind`` (``config``, ``host``, ``test``, ...), per host when ``host`` is given.

    Host loggers name their host in every record, as pytest-mh's do.
    """
    suffix = kind if host is None else f"{kind}.{host}"
    logger = MultihostLogger.GetLogger(
        loggercls=MultihostHostLogger if host is not None else MultihostLogger, suffix=suffix
    )
    if host is not None:
        logger.extra["host"] = host
    return logger
