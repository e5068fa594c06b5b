"""The directory's service, started by the test and ended by its with-block, answers the client by name."""

from __future__ import annotations

import pytest
from framework.roles.client import Client
from framework.roles.server import Server
from framework.topology import KnownTopology
from framework.topology_controllers import CLIENT_CONF


@pytest.mark.topology(KnownTopology.Replica)
def test_directory__client_conf_names_the_server(client: Client, server: Server) -> None:
    conf = client.host.conn.run(f"cat {CLIENT_CONF}").stdout_lines
    assert conf == [f"server = {server.hostname}", f"port = {server.host.port}"]


@pytest.mark.topology(KnownTopology.Replica)
def test_directory__service_answers_the_client_by_fqdn(client: Client, server: Server) -> None:
    server.directory.add("color", "blue")
    with server.directory.serve_once():
        answer = client.query(server.hostname, server.host.port, "get color")
    assert answer == "blue"
    assert f"to {client.host.conn.run('hostname -I').stdout.split()[0]}" in server.directory.log()


@pytest.mark.topology(KnownTopology.Replica)
def test_directory__entries_of_earlier_tests_are_gone(server: Server) -> None:
    assert server.directory.entries() == {"admin": "root"}


@pytest.mark.topology(KnownTopology.Replica)
def test_directory__unknown_entry(client: Client, server: Server) -> None:
    with server.directory.serve_once():
        assert client.query(server.hostname, server.host.port, "get nothing") == "none"


@pytest.mark.topology(KnownTopology.Replica)
def test_directory__controller_setup_ran_on_the_server_only(server: Server) -> None:
    assert server.directory.log().splitlines() == ["test starts"]


@pytest.mark.topology(KnownTopology.Replica)
def test_directory__a_failing_test_collects_artifacts(client: Client, server: Server) -> None:
    server.directory.add("color", "red")
    assert server.directory.entries()["color"] == "green", "fails on purpose: artifacts are collected"
