"""The directory: entries in a file on the server, served one request at a time by a process a test starts."""

from __future__ import annotations

from typing import Any

from pytest_mh import MultihostUtility

from ..hosts.server import DIRECTORY, LOG

# Answers one line, "get KEY", with the entry's value (or "none"), then exits: a test's with-block waits for it.
_SERVE_ONCE = r"""
import socket, sys
path, port, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
server = socket.create_server(("", port), reuse_port=True)
print("ready", flush=True)
conn, peer = server.accept()
request = conn.makefile().readline().split()
entries = dict(line.strip().split("=", 1) for line in open(path) if "=" in line)
answer = entries.get(request[1], "none") if request[:1] == ["get"] and len(request) == 2 else "bad request"
conn.sendall(answer.encode() + b"\n")
conn.close()
with open(log, "a") as f:
    print(f"served {request} to {peer[0]}", file=f)
"""


class Directory(MultihostUtility[Any]):
    def add(self, key: str, value: str) -> None:
        self.host.conn.run(f"printf '%s=%s\\n' {key} {value} >> {DIRECTORY}")

    def entries(self) -> dict[str, str]:
        lines = self.host.conn.run(f"cat {DIRECTORY}").stdout_lines
        return dict(line.split("=", 1) for line in lines if "=" in line)

    def serve_once(self) -> Any:
        """Start the service for one request; use as ``with server.directory.serve_once():`` (ends with it)."""
        process = self.host.conn.async_run(f"python3 -c '{_SERVE_ONCE}' {DIRECTORY} {self.host.port} {LOG}")
        ready = next(process.stdout)
        if ready.strip() != "ready":
            raise AssertionError(f"the replica service did not start: {ready!r}")
        return process

    def log(self) -> str:
        return self.host.conn.run(f"cat {LOG}").stdout

    def get_artifacts_list(self, host: Any, artifacts_type: Any) -> set[str]:
        return {LOG}
