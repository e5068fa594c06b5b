"""Configuration files (ini, lines, blocks): set and restore."""

from __future__ import annotations

from ..host import MultihostHost
from ..utility import MultihostUtility

__all__ = ["ConfigFiles"]


class ConfigFiles(MultihostUtility[MultihostHost]):
    """Configuration files (ini, lines, blocks): set and restore (being written)."""
