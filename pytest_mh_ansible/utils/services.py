"""Services: start, stop, restart, enable...; the original state restored."""

from __future__ import annotations

from ..host import MultihostHost
from ..utility import MultihostUtility

__all__ = ["Services"]


class Services(MultihostUtility[MultihostHost]):
    """Services: start, stop, restart, enable...; the original state restored (being written)."""
