"""The example suite: a web server and its client, on two kinds of server; every change is undone."""

from __future__ import annotations

import pytest
from webapp.roles import Client, Server
from webapp.topology import KnownTopology, KnownTopologyGroup


@pytest.mark.topology(KnownTopologyGroup.AnyServer)
def test_client_gets_the_default_page(client: Client, server: Server) -> None:
    response = client.get(server.url)
    assert response.status == 200
    assert response.body == f"hello from {server.host.name} ({server.host.server})\n"


@pytest.mark.topology(KnownTopologyGroup.AnyServer)
def test_changed_page_is_served_and_reverted(client: Client, server: Server) -> None:
    server.write_page("changed by a test\n")
    assert client.get(server.url).body == "changed by a test\n"


@pytest.mark.topology(KnownTopologyGroup.AnyServer)
def test_page_is_back_after_the_previous_test(client: Client, server: Server) -> None:
    # Runs after the test above on the same hosts: its change must be gone.
    assert client.get(server.url).body == f"hello from {server.host.name} ({server.host.server})\n"


@pytest.mark.topology(KnownTopologyGroup.AnyServer)
def test_server_on_another_port_after_restart(client: Client, server: Server) -> None:
    server.set_port(8080)
    server.restart()
    assert client.get(server.url).status == 200
    assert client.get(f"http://{server.host.hostname}:80/", timeout=2).status == 0


@pytest.mark.topology(KnownTopologyGroup.AnyServer)
def test_server_is_on_port_80_again(client: Client, server: Server) -> None:
    assert client.get(f"http://{server.host.hostname}:80/").status == 200


@pytest.mark.topology(KnownTopology.Nginx)
def test_firewall_rejects_the_client(client: Client, server: Server) -> None:
    server.firewall.reject_from(client.host.address)
    assert client.get(server.url, timeout=3).status == 0
    assert "reject" in server.firewall.rules()


@pytest.mark.topology(KnownTopology.Nginx)
def test_firewall_rules_are_gone(client: Client, server: Server) -> None:
    assert "mh_example" not in server.firewall.rules()
    assert client.get(server.url).status == 200


@pytest.mark.topology(KnownTopologyGroup.AnyServer)
def test_playbook_from_a_role(client: Client, server: Server) -> None:
    result = server.deploy_page("deployed by a playbook")
    assert result.ok
    assert [task.task for task in result.changed_tasks] == ["Write the page"]
    assert result.stats[server.host.name].changed == 1
    assert client.get(server.url).body == "deployed by a playbook\n"
