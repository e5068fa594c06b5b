"""The client host: where users log in and query the server."""

from __future__ import annotations

from .base import BaseReplicaHost


class ClientHost(BaseReplicaHost):
    pass
