"""Commands through pytest-mh's connection API: bash, exec, errors, expect, CLIBuilder."""

from __future__ import annotations

import pytest
from framework.roles import Client
from framework.topology import KnownTopology
from pytest_mh.conn import ProcessError


@pytest.mark.topology(KnownTopology.Client)
def test_commands__run_is_bash_and_dedented(client: Client) -> None:
    result = client.host.conn.run(
        """
        words=(a b c)
        echo "${#words[@]} ${words[1]}"
        echo second
        """
    )
    assert result.rc == 0
    assert result.stdout == "3 b\nsecond"
    assert result.stdout_lines == ["3 b", "second"]


@pytest.mark.topology(KnownTopology.Client)
def test_commands__env_cwd_and_input(client: Client) -> None:
    result = client.host.conn.run('echo "$MH_X $(pwd)"; cat', env={"MH_X": "it's"}, cwd="/tmp", input="in\n")
    assert result.stdout_lines == ["it's /tmp", "in"]


@pytest.mark.topology(KnownTopology.Client)
def test_commands__exec_quotes_each_argument(client: Client) -> None:
    assert client.host.conn.exec(["printf", "%s|", "a b", "$HOME"]).stdout == "a b|$HOME|"
    assert client.hostname() != ""


@pytest.mark.topology(KnownTopology.Client)
def test_commands__process_error(client: Client) -> None:
    with pytest.raises(ProcessError) as info:
        client.host.conn.run("echo oops >&2; exit 3")
    assert info.value.rc == 3
    assert info.value.stderr_lines == ["oops"]
    result = client.host.conn.run("exit 4", raise_on_error=False)
    assert result.rc == 4


@pytest.mark.topology(KnownTopology.Client)
def test_commands__a_failing_command_fails_the_test(client: Client) -> None:
    client.host.conn.run("exit 5")  # this test fails on purpose, under both tools


@pytest.mark.topology(KnownTopology.Client)
@pytest.mark.require(lambda client: client.host.features["expect"], "expect is not installed")
def test_commands__expect(client: Client) -> None:
    result = client.host.conn.expect(
        """
        spawn /bin/sh -c "printf 'name? '; read n; echo hello \\$n"
        expect "name? "
        send "mh\\r"
        expect {
            "hello mh" { exit 0 }
            timeout { exit 201 }
            eof { exit 202 }
        }
        """
    )
    assert result.rc == 0


@pytest.mark.topology(KnownTopology.Client)
def test_commands__cli_builder(client: Client) -> None:
    cli = client.host.cli
    args = {
        "format": (cli.option.POSITIONAL, "%s,"),
        "skipped": None,
        "values": (cli.option.POSITIONAL, ["x y", "z"]),
    }
    assert client.host.conn.exec(cli.argv("printf", args)).stdout == "x y,z,"
    assert cli.command("printf", args) == "printf '%s,' 'x y' 'z'"
    assert client.host.conn.run(cli.command("printf", args)).stdout == "x y,z,"
