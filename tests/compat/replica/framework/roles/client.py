"""The client role: resolves and reaches the server."""

from __future__ import annotations

from .base import BaseReplicaRole


class Client(BaseReplicaRole):
    def query(self, server: str, port: int, request: str) -> str:
        """Send one line to the replica service on ``server`` (a host name) and return its answer."""
        script = f'exec 3<>/dev/tcp/{server}/{port} && printf "%s\\n" "$0" >&3 && head -n1 <&3'
        return self.host.conn.exec(["bash", "-c", script, request]).stdout.strip()
