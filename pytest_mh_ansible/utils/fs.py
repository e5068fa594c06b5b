"""Files and directories: read, write, copy, chmod..., every change reverted."""

from __future__ import annotations

from ..host import MultihostHost
from ..utility import MultihostUtility

__all__ = ["FileSystem"]


class FileSystem(MultihostUtility[MultihostHost]):
    """Files and directories: read, write, copy, chmod..., every change reverted (being written)."""
