"""The server role: the directory's entries and its service."""

from __future__ import annotations

from typing import Any

from ..utils.directory import Directory
from .base import BaseReplicaRole


class Server(BaseReplicaRole):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.directory = Directory(self.host)
