"""The compat layer's hostname, tc and journald utilities, without hosts: arguments, commands, rollback."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

import pytest_mh_ansible
from pytest_mh_ansible import Connection as AnsibleConnection
from pytest_mh_ansible import MultihostError, MultihostHost, MultihostRole, RollbackJournal
from pytest_mh_ansible.compat import _alias
from pytest_mh_ansible.compat.conn import Bash, HostConnection
from pytest_mh_ansible.compat.utils.hostname import HostnameUtils
from pytest_mh_ansible.compat.utils.journald import JournaldUtils
from pytest_mh_ansible.compat.utils.tc import LinuxTrafficControl, delay_ms

FAKE_HOSTNAME = """#!/bin/sh
# hostname(1) for the tests: the name lives in a file next to this script.
f="$(dirname "$0")/name"
case "$1" in
    "") cat "$f" ;;
    -s) cut -d. -f1 "$f" ;;
    -f) case "$(cat "$f")" in *.*) cat "$f" ;; *) echo "hostname: Name or service not known" >&2; exit 1 ;; esac ;;
    -*) exit 2 ;;
    *) echo "$1" > "$f" ;;
esac
"""


class _Transport:
    """Answers a script by the first regex that matches it, else runs it locally with ``bin`` first on PATH."""

    def __init__(self, bin: Path | None = None, answers: dict[str, tuple[int, str, str]] | None = None) -> None:
        self.bin = bin
        self.answers = answers or {}
        self.scripts: list[str] = []

    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass

    def exec(self, command: str, *, input: bytes | None = None, become: Any = None, become_user: Any = None,
             timeout: float | None = None) -> tuple[int, bytes, bytes]:  # fmt: skip
        words = shlex.split(command)
        script = words[-1] if words[:3] == ["/usr/bin/env", "bash", "-c"] else command
        self.scripts.append(script)
        for pattern, (rc, out, err) in self.answers.items():
            if re.search(pattern, script):
                return rc, out.encode(), err.encode()
        env = dict(os.environ)
        if self.bin is not None:
            env["PATH"] = f"{self.bin}:{env['PATH']}"
        proc = subprocess.run(["/bin/sh", "-c", command], input=input, capture_output=True, env=env, check=False)
        return proc.returncode, proc.stdout, proc.stderr


class _Host:
    """What the compat utilities need of a host: a name, a connection and the journal."""

    def __init__(self, transport: _Transport) -> None:
        self.name = self.hostname = "client1"
        self.conn = HostConnection(AnsibleConnection("client1", {}, transport=transport), Bash(), host="client1")
        self.journal = RollbackJournal()
        self.journal.open("test")


# -- the import name ---------------------------------------------------------------------------------


def test_compat_utils__pytest_mh_names_resolve_to_the_layer() -> None:
    _alias.install()
    import pytest_mh.utils.hostname
    import pytest_mh.utils.journald
    import pytest_mh.utils.tc

    assert pytest_mh.utils.hostname.HostnameUtils is HostnameUtils
    assert pytest_mh.utils.tc.LinuxTrafficControl is LinuxTrafficControl
    assert pytest_mh.utils.journald.JournaldUtils is JournaldUtils
    assert issubclass(LinuxTrafficControl, pytest_mh_ansible.TrafficControl)
    assert issubclass(HostnameUtils, pytest_mh.MultihostReentrantUtility)
    assert issubclass(JournaldUtils, pytest_mh.MultihostUtility)


# -- tc ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("time", "ms"),
    [(500, 500), (0, 0), ("500ms", 500), ("500", 500), (" 20 msec ", 20), ("1s", 1000), ("1.5s", 1500),
     ("2000us", 2), ("0.25secs", 250), ("3MS", 3)],
)  # fmt: skip
def test_compat_utils__delay_is_int_milliseconds_or_a_tc_time(time: str | int, ms: int) -> None:
    assert delay_ms(time) == ms


@pytest.mark.parametrize("time", ["fast", "5 min", "1500us", "-5ms", "", -1, 1.5, True, None])
def test_compat_utils__other_delays_are_value_errors(time: Any) -> None:
    with pytest.raises(ValueError, match="delay"):
        delay_ms(time)


class _TcConn:
    """A host connection (this project's API) that answers tc's probes and records every command."""

    def __init__(self) -> None:
        self.commands: list[str] = []
        self.root = False  # whether our htb root qdisc is on eth0

    def run(self, command: str, *, raise_on_error: bool = True, **_: object) -> pytest_mh_ansible.ProcessResult:
        self.commands.append(command)
        self.root = command.startswith("tc qdisc add dev eth0 root") or (
            self.root and command != "tc qdisc del dev eth0 root"
        )
        out = ""
        if command.startswith("getent ahosts server1"):
            out = "10.0.0.2 STREAM server1\n10.0.0.2 DGRAM\n"
        elif command.startswith("ip -o route get"):
            out = "10.0.0.2 dev eth0 src 10.0.0.1 uid 0\n"
        elif command.startswith("tc qdisc show dev eth0 root"):
            out = "qdisc htb 1: root refcnt 2\n" if self.root else ""
        return pytest_mh_ansible.ProcessResult(0, out, "", command, "client1")


def _tc_host() -> tuple[MultihostHost, _TcConn, RollbackJournal]:
    host = MultihostHost("client1", roles=("client",), domain="default", variables={})
    conn, journal = _TcConn(), RollbackJournal()
    journal.open("test")
    host._conn = conn  # type: ignore[assignment]
    host._mh_journal = journal
    return host, conn, journal


SERVER = MultihostHost("server1", roles=("server",), domain="default", variables={})
NETEM = "tc qdisc replace dev eth0 parent 1:2 handle 20: netem delay 500ms"
FILTER = "tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.2/32 flowid 1:2"


@pytest.mark.parametrize(
    "target",
    ["server1", SERVER, MultihostRole(None, "server", SERVER)],  # type: ignore[arg-type]
    ids=["str", "host", "role"],
)
@pytest.mark.parametrize("time", [500, "500ms", "0.5s"])
def test_compat_utils__add_delay_takes_a_name_host_or_role_and_int_or_str_time(target: Any, time: Any) -> None:
    host, conn, journal = _tc_host()
    LinuxTrafficControl(host).add_delay(target, time)
    assert conn.commands[0] == "getent ahosts server1"
    assert "tc qdisc add dev eth0 root handle 1: htb default 1" in conn.commands
    assert NETEM in conn.commands
    assert FILTER in conn.commands
    assert [e.operation for e in journal.entries()] == ["tc root qdisc on eth0"]
    conn.commands.clear()
    journal.close("test")
    assert conn.commands == ["tc qdisc show dev eth0 root", "tc qdisc del dev eth0 root"]


def test_compat_utils__add_delay_keyword_names_are_pytest_mh_s() -> None:
    host, conn, _ = _tc_host()
    LinuxTrafficControl(host).add_delay(host=SERVER, time="500ms")
    assert NETEM in conn.commands


@pytest.mark.parametrize("target", [42, None, object()])
def test_compat_utils__other_targets_are_value_errors(target: Any) -> None:
    host, conn, _ = _tc_host()
    tc = LinuxTrafficControl(host)
    with pytest.raises(ValueError, match="Invalid type of host"):
        tc.add_delay(target, 100)
    with pytest.raises(ValueError, match="Invalid type of host"):
        tc.remove_delay(target)
    assert conn.commands == []


def test_compat_utils__remove_delay_deletes_the_netem_leaf_and_keeps_the_root_for_the_journal() -> None:
    host, conn, journal = _tc_host()
    tc = LinuxTrafficControl(host)
    tc.add_delay("server1", 500)
    conn.commands.clear()
    tc.remove_delay(SERVER)
    assert [c for c in conn.commands if c.startswith("tc ")] == [
        "tc class replace dev eth0 parent 1: classid 1:2 htb rate 10gbit ceil 10gbit",
        "tc qdisc del dev eth0 parent 1:2 handle 20:",
    ]
    conn.commands.clear()
    tc.remove_delay(SERVER)  # not delayed any more: nothing to do
    assert [c for c in conn.commands if c.startswith("tc ")] == []
    journal.close("test")
    assert conn.commands[-1] == "tc qdisc del dev eth0 root"


def test_compat_utils__remove_delay_keeps_loss() -> None:
    host, conn, _ = _tc_host()
    tc = LinuxTrafficControl(host)
    tc.add_delay("server1", "20ms")
    tc.add_loss("server1", 5)
    conn.commands.clear()
    tc.remove_delay("server1")
    assert "tc qdisc replace dev eth0 parent 1:2 handle 20: netem loss 5%" in conn.commands
    assert not any("qdisc del" in c for c in conn.commands)


def test_compat_utils__remove_delay_of_an_unknown_host_does_nothing() -> None:
    host, conn, _ = _tc_host()
    LinuxTrafficControl(host).remove_delay("server1")
    assert conn.commands == ["getent ahosts server1"]


# -- hostname ------------------------------------------------------------------------------------------


@pytest.fixture
def named(tmp_path: Path) -> tuple[_Host, Path]:
    script = tmp_path / "hostname"
    script.write_text(FAKE_HOSTNAME)
    script.chmod(0o755)
    (tmp_path / "name").write_text("client1.test\n")
    return _Host(_Transport(tmp_path)), tmp_path / "name"


def test_compat_utils__hostname_reads_name_shortname_fqdn(named: tuple[_Host, Path]) -> None:
    host, _ = named
    util = HostnameUtils(host)
    assert (util.name, util.shortname, util.fqdn) == ("client1.test", "client1", "client1.test")


def test_compat_utils__hostname_change_is_put_back_when_the_scope_ends(named: tuple[_Host, Path]) -> None:
    host, state = named
    util = HostnameUtils(host)
    util.name = "renamed.test"
    assert util.name == "renamed.test"
    assert util.shortname == "renamed"
    util.name = "again"
    assert [e.operation for e in host.journal.entries()] == ["hostname (was client1.test)"]  # first old name only
    host.journal.close("test")
    assert state.read_text() == "client1.test\n"


def test_compat_utils__hostname_unchanged_records_nothing(named: tuple[_Host, Path]) -> None:
    host, _ = named
    HostnameUtils(host).name = "client1.test"
    assert host.journal.entries() == []


def test_compat_utils__hostname_with_block_puts_the_name_back_at_its_end(named: tuple[_Host, Path]) -> None:
    host, state = named
    util = HostnameUtils(host)
    with util:
        util.name = "inner"
        with util:
            util.name = "innermost"
        assert state.read_text() == "inner\n"
    assert state.read_text() == "client1.test\n"


def test_compat_utils__hostname_fqdn_error_raises_and_bad_names_are_refused(named: tuple[_Host, Path]) -> None:
    host, _ = named
    util = HostnameUtils(host)
    util.name = "plain"
    with pytest.raises(pytest_mh_ansible.ProcessError):
        util.fqdn  # noqa: B018 - a property that raises
    for bad in ("", "-f", "two words"):
        with pytest.raises(ValueError, match="not a host name"):
            util.name = bad


# -- journald ------------------------------------------------------------------------------------------


def _journald(answers: dict[str, tuple[int, str, str]]) -> tuple[JournaldUtils, _Transport]:
    transport = _Transport(answers={r"^date \+%s\.%N$": (0, "1000.5\n", ""), **answers})
    return JournaldUtils(_Host(transport)), transport


def _argv(script: str) -> list[str]:
    """The journalctl command line of a journalctl() script."""
    return shlex.split(script.rpartition("exec ")[2])


def test_compat_utils__journalctl_since_the_test_start_then_since_clear() -> None:
    util, transport = _journald(
        {r"^date '\+%Y": (0, "2026-01-02 03:04:05.123456789\n", ""), r"journalctl": (0, "x\n", "")}
    )
    util.journalctl(unit="sssd", lines=5)
    argv = _argv(transport.scripts[-1])
    assert argv[:5] == ["journalctl", "--unit", "sssd", "--lines", "5"]
    assert argv[5] == "--since"
    assert argv[6].startswith("@")
    assert argv[-1] == "--no-pager"
    assert transport.scripts[-1].startswith("if [ ! -d /run/systemd/journal ]")
    assert util.now == "2026-01-02 03:04:05.123456789"
    util.clear()
    util.journalctl(reverse=True, output="cat", identifier="app", system=True, user=True, args=["-b", 0])
    assert _argv(transport.scripts[-1]) == [
        "journalctl", "--since", "2026-01-02 03:04:05.123456789", "--reverse", "--output", "cat",
        "--identifier", "app", "--system", "--user", "--no-pager", "-b", "0",
    ]  # fmt: skip
    util.journalctl(since="yesterday")
    assert _argv(transport.scripts[-1])[1:3] == ["--since", "yesterday"]
    util.journalctl(current=False)
    assert _argv(transport.scripts[-1]) == ["journalctl", "--no-pager"]
    util.setup()  # the next test: from its own start again
    util.journalctl()
    assert _argv(transport.scripts[-1])[2].startswith("@")


def test_compat_utils__is_match_and_count_use_grep_and_the_exit_code() -> None:
    util, transport = _journald({r"--grep hello": (0, "a hello\nb hello\n", ""), r"--grep": (1, "", "")})
    assert util.is_match("hello", unit="app")
    assert util.count("hello") == 2
    assert "--unit app" in transport.scripts[-2]
    assert "--quiet" in transport.scripts[-1]
    assert not util.is_match("absent")
    assert util.count("absent") == 0


def test_compat_utils__journal_search_without_journald_is_a_clear_error() -> None:
    util, _ = _journald({r"journalctl": (127, "", "no journald on this host\n")})
    assert util.journalctl().rc == 127  # journalctl itself does not raise, as in pytest-mh
    with pytest.raises(MultihostError, match="no journald"):
        util.is_match("x")
    with pytest.raises(MultihostError, match="no journald"):
        util.count("x")


def test_compat_utils__journalctl_refuses_an_option_it_does_not_take() -> None:
    util, transport = _journald({r"journalctl": (0, "", "")})
    with pytest.raises(TypeError, match="unexpected keyword argument 'units'"):
        util.journalctl(units="sssd", colour=True)  # type: ignore[call-arg]
    assert not any("journalctl" in script for script in transport.scripts)  # nothing ran
