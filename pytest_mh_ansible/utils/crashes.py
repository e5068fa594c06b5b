"""Crash detection: core dumps (and denials) during a test."""

from __future__ import annotations

from ..host import MultihostHost
from ..utility import MultihostUtility

__all__ = ["Crashes"]


class Crashes(MultihostUtility[MultihostHost]):
    """Crash detection: core dumps (and denials) during a test (being written)."""
