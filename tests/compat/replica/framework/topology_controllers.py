"""Topology controllers: each prepares its topology and restores its hosts after every test (backup controller)."""

from __future__ import annotations

from typing import Any

from pytest_mh import BackupTopologyController

from .config import ReplicaMultihostConfig
from .hosts.client import ClientHost
from .hosts.server import LOG, ServerHost

CLIENT_CONF = "/etc/replica/client.conf"


class ClientTopologyController(BackupTopologyController[ReplicaMultihostConfig]):
    @BackupTopologyController.restore_vanilla_on_error
    def topology_setup(self, client: ClientHost) -> None:
        client.conn.run(f"printf 'server = none\\n' > {CLIENT_CONF}")
        super().topology_setup()


class ClientServerTopologyController(BackupTopologyController[ReplicaMultihostConfig]):
    """Points the client at the server by its name; takes only the hosts each hook needs."""

    @BackupTopologyController.restore_vanilla_on_error
    def topology_setup(self, client: ClientHost, server: ServerHost) -> None:
        client.conn.run(f"printf 'server = %s\\nport = %s\\n' {server.hostname} {server.port} > {CLIENT_CONF}")
        super().topology_setup()

    def setup(self, server: ServerHost) -> None:
        server.conn.run(f"echo 'test starts' >> {LOG}")

    def teardown(self, client: ClientHost, server: ServerHost) -> None:
        super().teardown()

    def get_artifacts_list(self, host: Any, artifacts_type: Any) -> set[str]:
        return {CLIENT_CONF} if artifacts_type == "test" and host.role == "client" else set()
