"""The example's known topologies: a client and one web server, of two kinds."""

from __future__ import annotations

from enum import unique
from typing import final

from pytest_mh_ansible import KnownTopologyBase, KnownTopologyGroupBase, Topology, TopologyDomain, TopologyMark


@final
@unique
class KnownTopology(KnownTopologyBase):
    """Each member is one topology; tests use it as ``@pytest.mark.topology(KnownTopology.Nginx)``."""

    Nginx = TopologyMark(
        "nginx",
        Topology(TopologyDomain("webapp", client=1, nginx=1)),
        fixtures=dict(client="webapp.client[0]", server="webapp.nginx[0]"),
    )
    Lighttpd = TopologyMark(
        "lighttpd",
        Topology(TopologyDomain("webapp", client=1, lighttpd=1)),
        fixtures=dict(client="webapp.client[0]", server="webapp.lighttpd[0]"),
    )


@final
class KnownTopologyGroup(KnownTopologyGroupBase):
    """A test marked with a group runs once per topology in it."""

    AnyServer = [KnownTopology.Nginx, KnownTopology.Lighttpd]
