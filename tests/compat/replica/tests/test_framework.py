"""The framework's marker, require conditions and the topology parametrization."""

from __future__ import annotations

import pytest
from framework.roles.client import Client
from framework.roles.server import Server
from framework.topology import KnownTopology, KnownTopologyGroup
from pytest_mh import MultihostItemData


@pytest.mark.topology(KnownTopology.Client)
@pytest.mark.builtwith(client="python3")
def test_framework__builtwith_a_feature_the_client_has(client: Client) -> None:
    assert client.host.features["python3"]


@pytest.mark.topology(KnownTopology.Replica)
@pytest.mark.builtwith(server="nosuchtool")
def test_framework__builtwith_a_missing_feature_skips(server: Server) -> None:
    raise AssertionError("skipped by the marker")


@pytest.mark.topology(KnownTopologyGroup.AnyClient)
def test_framework__item_data_names_the_topology(request: pytest.FixtureRequest, client: Client) -> None:
    data = MultihostItemData.GetData(request.node)
    assert data is not None
    assert data.topology_mark is not None
    assert data.topology_mark.name in request.node.name


@pytest.mark.topology(KnownTopology.Replica)
@pytest.mark.require(lambda server: server.host.port == 7389, "the host file's port")
def test_framework__require_reads_the_host_config(server: Server) -> None:
    assert server.host.config["port"] == 7389


@pytest.mark.topology(KnownTopology.Replica)
@pytest.mark.require(lambda client: client.hostname.endswith(".example"), "hosts named .example")
def test_framework__require_false_skips(client: Client) -> None:
    raise AssertionError("skipped by require")
