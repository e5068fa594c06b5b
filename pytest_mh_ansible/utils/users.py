"""Users and groups: add, modify, delete; created ones removed, others restored."""

from __future__ import annotations

from ..host import MultihostHost
from ..utility import MultihostUtility

__all__ = ["Users"]


class Users(MultihostUtility[MultihostHost]):
    """Users and groups: add, modify, delete; created ones removed, others restored (being written)."""
