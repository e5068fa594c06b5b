"""Logs: the journal or a log file since the test started."""

from __future__ import annotations

from ..host import MultihostHost
from ..utility import MultihostUtility

__all__ = ["Logs"]


class Logs(MultihostUtility[MultihostHost]):
    """Logs: the journal or a log file since the test started (being written)."""
