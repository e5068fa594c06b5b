"""Known topologies and groups of them."""

from __future__ import annotations

from pytest_mh import KnownTopologyBase, KnownTopologyGroupBase, Topology, TopologyDomain, TopologyMark

from .topology_controllers import ClientServerTopologyController, ClientTopologyController


class KnownTopology(KnownTopologyBase):
    Client = TopologyMark(
        name="client",
        topology=Topology(TopologyDomain("replica", client=1)),
        controller=ClientTopologyController(),
        fixtures=dict(client="replica.client[0]"),
    )
    Replica = TopologyMark(
        name="replica",
        topology=Topology(TopologyDomain("replica", client=1, server=1)),
        controller=ClientServerTopologyController(),
        fixtures=dict(client="replica.client[0]", server="replica.server[0]", provider="replica.server[0]"),
    )


class KnownTopologyGroup(KnownTopologyGroupBase):
    AnyClient = [KnownTopology.Client, KnownTopology.Replica]
