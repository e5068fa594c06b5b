"""Kernel parameters (sysctl): set and restore."""

from __future__ import annotations

from ..host import MultihostHost
from ..utility import MultihostUtility

__all__ = ["Sysctl"]


class Sysctl(MultihostUtility[MultihostHost]):
    """Kernel parameters (sysctl): set and restore (being written)."""
