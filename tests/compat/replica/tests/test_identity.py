"""The hosts know their own names and each other's, as in the suite's CI."""

from __future__ import annotations

import pytest
from framework.roles.client import Client
from framework.roles.server import Server
from framework.topology import KnownTopology, KnownTopologyGroup


@pytest.mark.topology(KnownTopologyGroup.AnyClient)
def test_identity__client_knows_its_fully_qualified_name(client: Client) -> None:
    assert client.host.conn.run("hostname -f").stdout.strip() == client.hostname
    assert "." in client.hostname


@pytest.mark.topology(KnownTopology.Replica)
def test_identity__each_host_resolves_the_other(client: Client, server: Server) -> None:
    server_address = server.host.conn.run(f"getent hosts {server.hostname}").stdout.split()[0]
    assert client.host.conn.run(f"getent hosts {server.hostname}").stdout.split()[0] == server_address
    assert server.host.conn.run(f"getent hosts {client.hostname}").stdout.split()[1] == client.hostname


@pytest.mark.topology(KnownTopology.Replica)
def test_identity__provider_is_the_server(server: Server, provider: Server) -> None:
    assert provider is server
