"""Life cycle: utilities (eager and postponed), backup host, topology controller, require, markers, mh."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from framework.hosts import APP_CONF
from framework.roles import Client, Server
from framework.topology import TOPOLOGY_MARKER, KnownTopology, KnownTopologyGroup
from framework.utils import AppConfig, Greeting
from pytest_mh import mh_fixture

CLIENT_FILE = "/etc/mhcompat-client.conf"


@pytest.mark.topology(KnownTopology.Client)
def test_fs_1__write_and_read(client: Client) -> None:
    client.fs.write(CLIENT_FILE, "a = 1\n")
    assert client.fs.read(CLIENT_FILE) == "a = 1"


@pytest.mark.topology(KnownTopology.Client)
def test_fs_2__reverted_after_the_test(client: Client) -> None:
    assert not client.fs.exists(CLIENT_FILE)


@pytest.mark.topology(KnownTopology.Client)
def test_utilities__eager_utility_is_set_up(client: Client) -> None:
    assert client.host.conn.run(f"cat {Greeting.MARKER}").stdout == "hello"


@pytest.mark.topology(KnownTopology.ClientServer)
def test_utilities__postponed_utility_unused_is_not_set_up(client: Client, server: Server) -> None:
    assert server.host.conn.run(f"test -e {AppConfig.MARKER}", raise_on_error=False).rc == 1


@pytest.mark.topology(KnownTopology.ClientServer)
def test_utilities__postponed_utility_is_set_up_on_first_use(client: Client, server: Server) -> None:
    server.appconf.set("port", "8080")
    assert server.host.conn.run(f"test -e {AppConfig.MARKER}", raise_on_error=False).rc == 0
    assert server.appconf.get("port") == "8080"


@pytest.mark.topology(KnownTopology.ClientServer)
def test_backup_1__raw_change(client: Client, server: Server) -> None:
    server.host.conn.run(f"echo 'port = 1' > {APP_CONF}; touch /etc/mhcompat/extra")


@pytest.mark.topology(KnownTopology.ClientServer)
def test_backup_2__restored_from_backup_data(client: Client, server: Server) -> None:
    assert server.host.conn.run(f"cat {APP_CONF}").stdout == "port = 80"
    assert server.host.conn.run("ls /etc/mhcompat").stdout_lines == ["app.conf"]


@pytest.mark.topology(KnownTopology.ClientServer)
def test_topology_controller__topology_setup_ran(client: Client, server: Server) -> None:
    assert client.host.conn.run(f"cat {TOPOLOGY_MARKER}").stdout == server.host.hostname


@pytest.mark.topology(KnownTopologyGroup.Any)
@pytest.mark.require(lambda **fixtures: "server" in fixtures, "needs a server")
def test_require__kwargs_get_every_fixture(client: Client) -> None:
    pass


def _feature(name: str, client: Client, strict: bool = False) -> bool:
    return client.host.features.get(name, False) or not strict


@pytest.mark.topology(KnownTopology.Client)
@pytest.mark.require(functools.partial(_feature, "bash"), "bash is missing")
def test_require__partial_with_defaults(client: Client) -> None:
    pass


@pytest.mark.topology(KnownTopology.Client)
@pytest.mark.require(lambda client: (client.host.features.get("nothing", False), "no such feature"))
def test_require__tuple_with_reason_skips(client: Client) -> None:
    pass


@pytest.mark.topology(KnownTopologyGroup.Any)
@pytest.mark.only_topology("client-server")
def test_marker__reads_multihost_item_data(client: Client) -> None:
    pass


@mh_fixture
def client_hostname(client: Client) -> str:
    return client.hostname()


@pytest.mark.topology(KnownTopology.Client)
def test_mh__fixture_attributes(mh: Any, client: Client, client_hostname: str) -> None:
    assert mh.ns.test.client[0] is client
    assert mh.topology_mark.name == "client"
    assert [role.role for role in mh.roles] == ["client"]
    assert client_hostname == client.hostname()
    assert client.host.role == "client"
    assert client.host.mh_domain.id == "test"
