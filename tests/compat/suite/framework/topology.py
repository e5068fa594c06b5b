"""Known topologies and a controller that prepares the client-server topology."""

from __future__ import annotations

from typing import Any

from pytest_mh import (
    KnownTopologyBase,
    KnownTopologyGroupBase,
    Topology,
    TopologyController,
    TopologyDomain,
    TopologyMark,
)

TOPOLOGY_MARKER = "/tmp/mhcompat-topology"


class ClientServerController(TopologyController[Any]):
    def topology_setup(self, client: Any, server: Any) -> None:
        client.conn.run(f"echo {server.hostname} > {TOPOLOGY_MARKER}")

    def topology_teardown(self, client: Any, server: Any) -> None:
        client.conn.run(f"rm -f {TOPOLOGY_MARKER}")


class KnownTopology(KnownTopologyBase):
    Client = TopologyMark(
        name="client",
        topology=Topology(TopologyDomain("test", client=1)),
        fixtures=dict(client="test.client[0]"),
    )
    ClientServer = TopologyMark(
        name="client-server",
        topology=Topology(TopologyDomain("test", client=1, server=1)),
        controller=ClientServerController(),
        fixtures=dict(client="test.client[0]", server="test.server[0]"),
    )


class KnownTopologyGroup(KnownTopologyGroupBase):
    Any = [KnownTopology.Client, KnownTopology.ClientServer]
