"""``MultihostLogger``: the ``logger`` of pytest-mh's hosts, roles and utilities, on Python's logging."""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

__all__ = ["MultihostLogger", "logger_for"]

ROOT = "pytest_mh_ansible.compat"


class MultihostLogger(logging.LoggerAdapter[logging.Logger]):
    """A logger that names its host in every record, with pytest-mh's ``phase()`` and ``colorize()``.

    Records go to Python's logging (``pytest_mh_ansible.compat.*``), so pytest's log capture and
    this project's per-test logs hold them; pytest-mh's colours and per-phase files are not kept.

    Example::

        self.logger.info("enrolling", extra={"data": {"realm": realm}})
        mh_logger.phase("BEFORE RESTART")
    """

    def __init__(self, logger: logging.Logger, host: str | None = None) -> None:
        super().__init__(logger, {"host": host or "-"})
        self.host = host

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        data = (kwargs.get("extra") or {}).get("data")
        prefix = f"{self.host}: " if self.host else ""
        if data:
            msg = f"{msg}\n" + "\n".join(f"  {key}: {value}" for key, value in dict(data).items())
        return f"{prefix}{msg}", kwargs

    def phase(self, phase: str) -> None:
        """Log the start of a phase (``SETUP``, ``TEST``, ...) as a visible separator."""
        self.info(f"{'=' * 10} {phase} {'=' * 10}")

    @staticmethod
    def colorize(text: str | Any, *colors: Any) -> str:
        """The text itself: colours are left to the log viewer here."""
        return str(text)


def logger_for(kind: str, host: str | None = None) -> MultihostLogger:
    """The logger of a host, role or utility: ``pytest_mh_ansible.compat.<kind>``."""
    return MultihostLogger(logging.getLogger(f"{ROOT}.{kind}"), host)
