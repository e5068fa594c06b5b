"""Firewall, traffic control, logs and crash detection: command construction with a fake connection."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from pytest_mh_ansible.conn import ProcessResult
from pytest_mh_ansible.errors import MultihostError
from pytest_mh_ansible.host import MultihostHost
from pytest_mh_ansible.rollback import RollbackJournal
from pytest_mh_ansible.utils.crashes import core_locations
from pytest_mh_ansible.utils.firewall import Firewall
from pytest_mh_ansible.utils.logs import Logs
from pytest_mh_ansible.utils.tc import TrafficControl

Answer = tuple[int, str, str] | Callable[[str], tuple[int, str, str]]


class FakeConn:
    """Answers commands by the first matching regex; records every command."""

    def __init__(self, answers: dict[str, Answer]) -> None:
        self.answers = answers
        self.commands: list[str] = []

    def run(self, command: str, *, input: str | None = None, raise_on_error: bool = True, **_: object) -> ProcessResult:
        command = command.removeprefix("PATH=$PATH:/usr/sbin:/sbin; ")
        self.commands.append(command if input is None else f"{command} <<{input}")
        rc, out, err = 0, "", ""
        for pattern, answer in self.answers.items():
            if re.search(pattern, command):
                rc, out, err = answer(command) if callable(answer) else answer
                break
        result = ProcessResult(rc, out, err, command, "h1")
        return result.throw() if raise_on_error else result

    def _mh_script(self, source: bytes, request: object) -> tuple[int, bytes, bytes] | None:
        return None  # no agent: the journal's snapshots are modules


def make_host(answers: dict[str, Answer]) -> tuple[MultihostHost, FakeConn, RollbackJournal]:
    host = MultihostHost("h1", roles=("client",), domain="default", variables={})
    conn = FakeConn(answers)
    journal = RollbackJournal()
    journal.open("test")
    host._conn = conn  # type: ignore[assignment]
    host._mh_journal = journal
    return host, conn, journal


SERVER = MultihostHost("server1", roles=("server",), domain="default", variables={"ansible_host": "10.9.9.9"})


def test_firewall__nft_detected_and_rules_reverted_newest_first() -> None:
    host, conn, journal = make_host(
        {
            r"command -v nft": (0, "nft\n", ""),
            r"getent ahosts server1": (0, "10.0.0.2 STREAM server1\n10.0.0.2 DGRAM\n", ""),
            r"nft list table": (1, "", "No such file"),
            r"nft --echo": (0, "add rule inet mh_firewall output ip daddr 10.0.0.2 reject # handle 7\n", ""),
        }
    )
    host.firewall.outbound.reject_host(SERVER)
    host.firewall.inbound.reject_port(8080)
    assert host.firewall.backend == "nft"
    assert any(c.startswith("nft -f - <<table inet mh_firewall {") for c in conn.commands)
    assert any(c.endswith("add rule inet mh_firewall output ip daddr 10.0.0.2 reject") for c in conn.commands)
    assert any(c.endswith("input tcp dport 8080 reject with tcp reset") for c in conn.commands)
    conn.commands.clear()
    journal.close("test")
    assert conn.commands == [
        "nft delete rule inet mh_firewall input handle 7",
        "nft delete rule inet mh_firewall output handle 7",
        "nft delete table inet mh_firewall",
    ]


def test_firewall__iptables_when_no_nft_and_unblock_removes_exact_rule() -> None:
    host, conn, journal = make_host({r"command -v nft": (0, "iptables\n", ""), r"iptables -S MH_INPUT": (1, "", "")})
    host.firewall.inbound.drop_host("10.0.0.3")
    assert host.firewall.backend == "iptables"
    assert any("iptables -N MH_INPUT && iptables -I INPUT 1 -j MH_INPUT" in c for c in conn.commands)
    assert conn.commands[-1] == "iptables -A MH_INPUT -s 10.0.0.3 -j DROP"
    host.firewall.unblock("10.0.0.3")
    assert conn.commands[-1] == "iptables -D MH_INPUT -s 10.0.0.3 -j DROP"
    conn.commands.clear()
    journal.close("test")
    assert len(conn.commands) == 1  # the rule is not deleted twice
    assert "iptables -X MH_INPUT" in conn.commands[0]


def test_firewall__neither_backend_is_a_clear_error() -> None:
    host, _, _ = make_host({r"command -v nft": (1, "", "")})
    with pytest.raises(MultihostError, match="host 'h1': the firewall needs nft or iptables"):
        host.firewall.outbound.drop_port(53, "udp")


def tc_answers() -> dict[str, Answer]:
    added: list[str] = []

    def show(_command: str) -> tuple[int, str, str]:
        return 0, "qdisc htb 1: root refcnt 2\n" if added else "qdisc noqueue 0: root refcnt 2\n", ""

    def add(command: str) -> tuple[int, str, str]:
        added.append(command)
        return 0, "", ""

    return {
        r"getent ahosts": (0, "10.0.0.2 STREAM server1\n", ""),
        r"ip -o route get": (0, "10.0.0.2 dev eth0 src 10.0.0.1 uid 0\n", ""),
        r"tc qdisc show dev eth0 root": show,
        r"tc qdisc add dev eth0 root": add,
    }


def test_tc__netem_delay_and_loss_commands_and_root_removed() -> None:
    host, conn, journal = make_host(tc_answers())
    host.tc.add_delay(SERVER, 200, jitter_ms=20)
    host.tc.add_loss(SERVER, 5)
    assert conn.commands[3:5] == [
        "tc qdisc add dev eth0 root handle 1: htb default 1",
        "tc class add dev eth0 parent 1: classid 1:1 htb rate 10gbit ceil 10gbit",
    ]
    assert "tc class replace dev eth0 parent 1: classid 1:2 htb rate 10gbit ceil 10gbit" in conn.commands
    assert "tc qdisc replace dev eth0 parent 1:2 handle 20: netem delay 200ms 20ms" in conn.commands
    assert "tc qdisc replace dev eth0 parent 1:2 handle 20: netem delay 200ms 20ms loss 5%" in conn.commands
    filters = [c for c in conn.commands if c.startswith("tc filter")]
    assert filters == ["tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.2/32 flowid 1:2"]
    conn.commands.clear()
    journal.close("test")
    assert conn.commands == ["tc qdisc show dev eth0 root", "tc qdisc del dev eth0 root"]


def test_tc__delay_removed_deletes_the_leaf_unless_loss_is_left() -> None:
    host, conn, _ = make_host(tc_answers())
    host.tc.add_delay(SERVER, 200)
    conn.commands.clear()
    host.tc.add_delay(SERVER, 0)  # a delay of 0 is no delay: the netem leaf goes
    assert "tc qdisc del dev eth0 parent 1:2 handle 20:" in conn.commands
    assert not [c for c in conn.commands if "netem" in c]
    host.tc.add_delay(SERVER, 100)
    host.tc.add_loss(SERVER, 5)
    conn.commands.clear()
    host.tc.remove_delay(SERVER)  # the loss stays: a leaf with loss only
    assert [c for c in conn.commands if "netem" in c] == [
        "tc qdisc replace dev eth0 parent 1:2 handle 20: netem loss 5%"
    ]
    assert not [c for c in conn.commands if " del " in c]
    conn.commands.clear()
    host.tc.remove_delay(SERVER)  # not delayed: nothing sent to the host
    assert conn.commands == ["getent ahosts server1"]


def test_tc__rate_limit_is_an_htb_class_without_netem() -> None:
    host, conn, _ = make_host(tc_answers())
    host.tc.limit_rate("10.0.0.2", "512kbit")
    assert "tc class replace dev eth0 parent 1: classid 1:2 htb rate 512kbit ceil 512kbit" in conn.commands
    assert not [c for c in conn.commands if "netem" in c]


@pytest.mark.parametrize("stderr", ["Error: Specified qdisc not found.", 'qdisc "netem" Unknown qdisc'])
def test_tc__missing_netem_names_host_qdisc_and_module(stderr: str) -> None:
    host, _, journal = make_host({r"netem": (2, "", stderr), **tc_answers()})
    with pytest.raises(MultihostError, match=r"host 'h1': the kernel has no 'netem' qdisc .*'sch_netem'"):
        host.tc.add_delay(SERVER, 100)
    assert [e.operation for e in journal.entries()] == ["tc root qdisc on eth0"]  # the root is still removed


def test_tc__foreign_root_qdisc_is_left_alone() -> None:
    host, _, _ = make_host({**tc_answers(), r"tc qdisc show dev eth0 root": (0, "qdisc htb 1: root refcnt 2\n", "")})
    with pytest.raises(MultihostError, match="already has a root qdisc"):
        host.tc.limit_rate(SERVER)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("core", ("files", ["/", "/root", "/tmp", "/var/tmp"], "core*")),
        ("/var/crash/core.%e.%p", ("files", ["/var/crash"], "core.*")),
        ("|/usr/lib/systemd/systemd-coredump %P %u", ("coredumpctl", ["/var/lib/systemd/coredump"], "core*")),
        ("|/usr/share/apport/apport -p%p", ("unavailable", [], "|/usr/share/apport/apport -p%p")),
    ],
)
def test_crashes__core_pattern_locations(pattern: str, expected: tuple[str, list[str], str]) -> None:
    assert core_locations(pattern) == expected


def test_crashes__finds_new_cores_and_denials() -> None:
    host, conn, _ = make_host(
        {
            r"^date": (0, "1000.0\n", ""),
            r"core_pattern": (0, "/var/crash/core.%p\n", ""),
            r"^find /var/crash": (0, "/var/crash/core.42\n", ""),
            r"ausearch": (0, "type=AVC msg=audit(1000.2:3): avc:  denied  { read } for pid=4\n", ""),
        }
    )
    found = [str(c) for c in host.crashes.check()]
    assert found == [
        "h1: core: /var/crash/core.42",
        "h1: denial: type=AVC msg=audit(1000.2:3): avc:  denied  { read } for pid=4",
    ]
    assert any("-name 'core.*' -newermt @" in c for c in conn.commands)
    # ausearch wants the C locale's %x date (a 4-digit year is "Error parsing start date")
    assert any("ausearch -m AVC,USER_AVC -ts $(LC_ALL=C date -d @" in c and "'+%x %T')" in c for c in conn.commands)


def test_crashes__denials_of_the_same_second_from_before_the_start_are_dropped() -> None:
    host, conn, _ = make_host(
        {
            r"ausearch": (
                0,
                "type=AVC msg=audit(1000.100:3): avc:  denied  { read } for pid=4\n"
                "type=AVC msg=audit(1000.900:4): avc:  denied  { write } for pid=5\n"
                'apparmor="DENIED" operation="open" (no stamp: kept)\n',
                "",
            ),
        }
    )
    found = [c.detail for c in host.crashes.denials(1000.5)]
    assert found == [
        "type=AVC msg=audit(1000.900:4): avc:  denied  { write } for pid=5",
        'apparmor="DENIED" operation="open" (no stamp: kept)',
    ]
    assert "date -d @1000 " in conn.commands[-1]  # from the start of the second


def test_crashes__pipe_to_unknown_handler_is_reported_unavailable() -> None:
    host, _, _ = make_host({r"core_pattern": (0, "|/usr/share/apport/apport %p\n", ""), r"^date": (0, "5.0\n", "")})
    assert host.crashes.cores(0.0) == []
    assert "apport" in str(host.crashes.unavailable)


def test_logs__file_returns_only_appended_text_and_all_after_rotation() -> None:
    state = {"stat": "11 6"}
    host, _, _ = make_host(
        {
            r"^stat -c '%i %s' /var/log/app.log 2>/dev/null": lambda _c: (0, "11 4\n", ""),
            r"&& cat": lambda _c: (0, f"{state['stat']}\nold\nnew line\n", ""),
        }
    )
    logs: Logs = host.logs
    logs.follow("/var/log/app.log")
    assert logs.file("/var/log/app.log") == "new line\n"
    state["stat"] = "12 20"  # another inode: rotated
    assert logs.file("/var/log/app.log") == "old\nnew line\n"


def test_logs__journal_without_journald_is_a_clear_error() -> None:
    host, _, _ = make_host({r"command -v journalctl": (127, "", ""), r"^date": (0, "5.0\n", "")})
    with pytest.raises(MultihostError, match="host 'h1': no journald"):
        host.logs.journal(unit="app")


def test_utilities_are_the_bundled_classes() -> None:
    host, _, _ = make_host({})
    assert isinstance(host.firewall, Firewall)
    assert isinstance(host.tc, TrafficControl)
