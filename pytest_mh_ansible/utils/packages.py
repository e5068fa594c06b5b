"""Packages: install and remove; undone after the test."""

from __future__ import annotations

from ..host import MultihostHost
from ..utility import MultihostUtility

__all__ = ["Packages"]


class Packages(MultihostUtility[MultihostHost]):
    """Packages: install and remove; undone after the test (being written)."""
