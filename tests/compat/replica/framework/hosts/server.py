"""The server host: the directory's data and its log, which every test's artifacts include."""

from __future__ import annotations

from typing import Any

from .base import CONF_DIR, BaseReplicaHost

DIRECTORY = f"{CONF_DIR}/directory.db"
LOG = f"{CONF_DIR}/replica.log"


class ServerHost(BaseReplicaHost):
    @property
    def port(self) -> int:
        return int(self.config.get("port", 7389))

    def start(self) -> None:
        self.conn.run(f"mkdir -p {CONF_DIR} && printf 'admin=root\\n' > {DIRECTORY} && : > {LOG}")

    def get_artifacts_list(self, host: Any, artifacts_type: Any) -> set[str]:
        return super().get_artifacts_list(host, artifacts_type) | {LOG, DIRECTORY}
