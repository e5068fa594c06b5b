"""Users made by a test log in over ssh with their passwords; they are gone after the test."""

from __future__ import annotations

import pytest
from framework.roles.client import Client
from framework.roles.server import Server
from framework.topology import KnownTopology, KnownTopologyGroup
from pytest_mh.conn.ssh import SSHAuthenticationError


@pytest.mark.topology(KnownTopologyGroup.AnyClient)
def test_users__login_with_password(client: Client) -> None:
    client.users.add("tuser1", "Secret123")
    with client.ssh("tuser1", "Secret123") as ssh:
        result = ssh.run("id -un; pwd")
    assert result.stdout_lines == ["tuser1", "/home/tuser1"]


@pytest.mark.topology(KnownTopology.Client)
def test_users__wrong_password_is_refused(client: Client) -> None:
    client.users.add("tuser2", "Secret123")
    with pytest.raises(SSHAuthenticationError):
        client.ssh("tuser2", "wrong").connect()


@pytest.mark.topology(KnownTopology.Client)
def test_users__users_of_earlier_tests_are_gone(client: Client) -> None:
    assert not client.users.exists("tuser1")
    assert not client.users.exists("tuser2")


@pytest.mark.topology(KnownTopology.Replica)
def test_users__a_shell_process_reads_lines_until_quit(client: Client, server: Server) -> None:
    server.users.add("tuser3", "Secret123")
    loop = 'while read -r line; do [ "$line" = quit ] && break; echo "got $line"; done'
    with server.ssh("tuser3", "Secret123") as ssh, ssh.async_run(loop) as process:
        process.stdin.write("one\n")
        assert next(process.stdout).strip() == "got one"
        process.stdin.write("two\nquit\n")
        assert next(process.stdout).strip() == "got two"


@pytest.mark.topology(KnownTopology.Replica)
def test_users__password_change_takes_effect(client: Client) -> None:
    client.users.add("tuser4", "Secret123")
    client.host.conn.run("chpasswd", input="tuser4:Changed456\n")
    with client.ssh("tuser4", "Changed456") as ssh:
        assert ssh.run("whoami").stdout.strip() == "tuser4"
