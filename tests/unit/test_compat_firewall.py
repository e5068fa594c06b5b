"""The compat layer's firewall utility, without hosts: arguments, rule order, commands, rollback."""

from __future__ import annotations

import re
from typing import Any

import pytest

import pytest_mh_ansible
from pytest_mh_ansible import MultihostError, MultihostHost, MultihostRole, RollbackJournal
from pytest_mh_ansible.compat import _alias
from pytest_mh_ansible.compat.utils.firewall import (
    Firewall,
    Firewalld,
    WindowsFirewall,
    WindowsFirewallInboundRules,
    WindowsFirewallOutboundRules,
)


class _FwConn:
    """A host connection (this project's API): answers the backend's probes, records every command.

    nft rule handles count up from 10; ``getent`` knows server1 and the services ldap and http-alt.
    """

    def __init__(self, backend: str = "nft", *, ip6tables: bool = True) -> None:
        self.backend = backend
        self.ip6tables = ip6tables
        self.commands: list[str] = []
        self.handle = 10

    def run(self, command: str, *, raise_on_error: bool = True, **_: object) -> pytest_mh_ansible.ProcessResult:
        command = command.removeprefix("PATH=$PATH:/usr/sbin:/sbin; ")
        self.commands.append(command)
        rc, out = 0, ""
        if command.startswith("command -v nft"):
            out = self.backend
        elif command.startswith("getent ahosts "):
            name = command.split()[-1]
            out = {"server1": "10.0.0.2 STREAM server1\n", "dual": "10.0.0.3 STREAM dual\nfd00::3 STREAM\n"}.get(
                name, ""
            )
            rc = 0 if out else 2
        elif command.startswith("getent services "):
            out = {"ldap/tcp": "ldap 389/tcp", "ldap/udp": "ldap 389/udp", "http-alt/tcp": "http-alt 8080/tcp"}.get(
                command.split()[-1], ""
            )
            rc = 0 if out else 2
        elif command.startswith(("nft list table", "iptables -S MH_INPUT")):
            rc = 1  # our table/chains do not exist yet
        elif command.startswith("nft --echo"):
            self.handle += 1
            out = f"{command.split(' rule ', 1)[1]} # handle {self.handle}\n"
        elif command.startswith("ip6tables") and not self.ip6tables:
            rc = 3
        result = pytest_mh_ansible.ProcessResult(rc, out, "", command, "client1")
        return result.throw() if raise_on_error and rc else result


def _firewall(backend: str = "nft", **kwargs: Any) -> tuple[Firewalld, _FwConn, RollbackJournal]:
    host = MultihostHost("client1", roles=("client",), domain="default", variables={})
    conn = _FwConn(backend, **kwargs)
    journal = RollbackJournal()
    journal.open("test")
    host._conn = conn  # type: ignore[assignment]
    host._mh_journal = journal
    return Firewalld(host), conn, journal


def _rules(conn: _FwConn) -> list[str]:
    """The rule commands run so far (adds, inserts, deletes), without the probes and the table."""
    return [c for c in conn.commands if re.match(r"nft (--echo|delete rule)|ip6?tables -[ID] MH_", c)]


# -- names and arguments ----------------------------------------------------------------------------------


def test_compat_firewall__pytest_mh_names_resolve_to_the_layer() -> None:
    _alias.install()
    import pytest_mh
    import pytest_mh.utils.firewall as mh_firewall

    assert mh_firewall.Firewalld is Firewalld
    assert mh_firewall.WindowsFirewall is WindowsFirewall
    assert issubclass(Firewalld, mh_firewall.Firewall)
    assert issubclass(Firewalld, pytest_mh.MultihostUtility)
    for name in ("FirewallInboundRules", "FirewallOutboundRules", "FirewalldInboundRules", "FirewalldOutboundRules",
                 "WindowsFirewallInboundRules", "WindowsFirewallOutboundRules", "HostSpec", "PortSpec",
                 "ProtocolSpec"):  # fmt: skip
        assert name in mh_firewall.__all__
        assert hasattr(mh_firewall, name)


@pytest.mark.parametrize(
    ("spec", "parsed"), [(389, (389, "tcp")), ((389, "tcp"), (389, "tcp")), ((53, "udp"), (53, "udp"))]
)
def test_compat_firewall__port_spec_defaults_to_tcp(spec: Any, parsed: tuple[int, str]) -> None:
    assert _firewall()[0].parse_port_spec(spec) == parsed


@pytest.mark.parametrize(
    ("spec", "error"),
    [("389", TypeError), ((389,), TypeError), (("389", "tcp"), TypeError), (True, TypeError), (3.5, TypeError),
     ((389, "sctp"), ValueError), (0, ValueError), (70000, ValueError)],
)  # fmt: skip
def test_compat_firewall__bad_port_specs_are_errors(spec: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="Unexpected"):
        _firewall()[0].parse_port_spec(spec)


def test_compat_firewall__host_spec_is_the_name_others_know() -> None:
    fw = _firewall()[0]
    server = MultihostHost("server1", roles=("server",), domain="default", variables={"mh_hostname": "server1.test"})
    role: MultihostRole[Any] = MultihostRole(None, "server", server)  # type: ignore[arg-type]
    assert fw.parse_host_spec("10.0.0.9") == "10.0.0.9"
    assert fw.parse_host_spec(server) == "server1.test"
    assert fw.parse_host_spec(role) == "server1.test"
    with pytest.raises(ValueError, match="Unexpected type of host: int"):
        fw.parse_host_spec(5)  # type: ignore[arg-type]


def test_compat_firewall__base_class_has_no_rules_of_its_own() -> None:
    fw = Firewall(MultihostHost("h", roles=(), domain="default", variables={}))
    with pytest.raises(NotImplementedError):
        _ = fw.inbound
    with pytest.raises(NotImplementedError):
        _ = fw.outbound


# -- rules --------------------------------------------------------------------------------------------------


def test_compat_firewall__nft_newest_rule_first_and_journal_removes_all() -> None:
    fw, conn, journal = _firewall()
    fw.inbound.accept_port(80)
    fw.inbound.drop_port([(80, "tcp"), (53, "udp")])
    fw.outbound.reject_host("server1")
    assert fw.backend == "nft"
    assert any(c.startswith("nft -f -") for c in conn.commands)  # the project's table, created once
    assert _rules(conn) == [
        "nft --echo --handle add rule inet mh_firewall input tcp dport 80 return",  # accept: our chain ends
        "nft --echo --handle insert rule inet mh_firewall input position 11 tcp dport 80 drop",
        "nft --echo --handle insert rule inet mh_firewall input position 12 udp dport 53 drop",
        "nft --echo --handle add rule inet mh_firewall output ip daddr 10.0.0.2 reject",
    ]
    del conn.commands[:]
    journal.close("test")
    assert _rules(conn) == [
        "nft delete rule inet mh_firewall output handle 14",
        "nft delete rule inet mh_firewall input handle 13",
        "nft delete rule inet mh_firewall input handle 12",
        "nft delete rule inet mh_firewall input handle 11",
    ]
    assert conn.commands[-1] == "nft delete table inet mh_firewall"


def test_compat_firewall__iptables_positions_follow_priority_and_skip_failed_ip6tables() -> None:
    fw, conn, journal = _firewall("iptables", ip6tables=False)
    fw.outbound.drop_host("server1")  # IPv4 only
    fw.outbound.accept_port(8080)  # both tools, ip6tables fails: best effort
    fw.outbound.reject_port("http-alt")
    assert _rules(conn) == [
        "iptables -I MH_OUTPUT 1 -d 10.0.0.2 -j DROP",
        "iptables -I MH_OUTPUT 1 -p tcp --dport 8080 -j RETURN",
        "ip6tables -I MH_OUTPUT 1 -p tcp --dport 8080 -j RETURN 2>/dev/null",
        "iptables -I MH_OUTPUT 1 -p tcp --dport 8080 -j REJECT",
        "ip6tables -I MH_OUTPUT 1 -p tcp --dport 8080 -j REJECT 2>/dev/null",
    ]
    del conn.commands[:]
    fw.remove_rich_rule(123, "nothing like this")  # unknown: nothing to do
    journal.close("test")
    # Deleted by position, newest first; the failed IPv6 copies are not deleted.
    assert _rules(conn) == ["iptables -D MH_OUTPUT 1", "iptables -D MH_OUTPUT 1", "iptables -D MH_OUTPUT 1"]


def test_compat_firewall__host_rules_for_every_address_and_role() -> None:
    fw, conn, _ = _firewall()
    server = MultihostHost("server1", roles=("server",), domain="default", variables={})
    fw.outbound.drop_host([MultihostRole(None, "server", server), "dual"])  # type: ignore[arg-type]
    assert [c.split(" output ", 1)[1] for c in _rules(conn)] == [
        "ip daddr 10.0.0.2 drop",
        "position 11 ip daddr 10.0.0.3 drop",  # each address is a rule of its own, the newest first
        "position 12 ip6 daddr fd00::3 drop",
    ]
    with pytest.raises(MultihostError, match="cannot resolve 'nowhere'"):
        fw.outbound.accept_host("nowhere")


def test_compat_firewall__service_names_are_looked_up_in_etc_services() -> None:
    fw, conn, _ = _firewall()
    fw.inbound.reject_port("ldap")
    fw.outbound.drop_port("636")  # a numeric string: TCP, as pytest-mh's outbound rules take it
    assert [c.split(" rule inet mh_firewall ", 1)[1] for c in _rules(conn)] == [
        "input tcp dport 389 reject",
        "input position 11 udp dport 389 reject",
        "output tcp dport 636 drop",
    ]
    with pytest.raises(MultihostError, match="unknown service 'nosuch'"):
        fw.inbound.drop_port("nosuch")


def test_compat_firewall__rich_rules_default_policy_is_outgoing_and_removable() -> None:
    fw, conn, journal = _firewall()
    rule = 'family="ipv4" destination address="10.0.0.2" port port="389" protocol="tcp" reject'
    priority = fw.add_rich_rule(rule)
    assert priority == 30000
    assert fw.add_rich_rule("source address=fd00::/64 drop", priority=5) == 5
    assert [c.split(" rule inet mh_firewall ", 1)[1] for c in _rules(conn)] == [
        "output ip daddr 10.0.0.2 tcp dport 389 reject",
        "output position 11 ip6 saddr fd00::/64 drop",  # priority 5: before the rule of 30000
    ]
    del conn.commands[:]
    fw.remove_rich_rule(priority, rule)
    assert _rules(conn) == ["nft delete rule inet mh_firewall output handle 11"]
    del conn.commands[:]
    journal.close("test")
    assert _rules(conn) == ["nft delete rule inet mh_firewall output handle 12"]  # the other one only


@pytest.mark.parametrize(
    ("rule", "why"),
    [("forward-port port=80 protocol=tcp to-port=8080", "'forward-port"),
     ("source address=10.0.0.2 log prefix=x drop", "'log'"),
     ("source address=10.0.0.2", "without accept"),
     ("drop", "without address, port or service"),
     ("port port=80-90 protocol=tcp drop", "a port without"),
     ("family=ipv6 source address=10.0.0.2 drop", "of another family"),
     ("source address=server1 drop", "not an address"),
     ("source address=10.0.0.2 drop accept", "after the action")],
)  # fmt: skip
def test_compat_firewall__unknown_rich_rules_are_clear_errors(rule: str, why: str) -> None:
    fw, conn, _ = _firewall()
    with pytest.raises(MultihostError, match=f"rich rule .*{re.escape(why)}.*not supported"):
        fw.add_rich_rule(rule)
    assert _rules(conn) == []


def test_compat_firewall__policies_give_the_direction_and_take_their_rules_along() -> None:
    fw, conn, _ = _firewall()
    assert fw.add_policy("in", egress="HOST", priority=-5) == -5
    assert fw.add_policy("out", ingress="HOST", egress="ANY") == 30000
    fw.add_rich_rule("port port=22 protocol=tcp accept", policy="in")
    fw.add_rich_rule("destination address=10.0.0.2 drop", policy="out")
    assert [c.split(" rule inet mh_firewall ")[1] for c in _rules(conn)] == [
        "input tcp dport 22 return",
        "output ip daddr 10.0.0.2 drop",
    ]
    del conn.commands[:]
    fw.remove_policy("in")
    assert _rules(conn) == ["nft delete rule inet mh_firewall input handle 11"]
    assert fw._policies == ["out"]
    with pytest.raises(MultihostError, match="no firewall policy 'in'"):
        fw.add_rich_rule("port port=22 protocol=tcp drop", policy="in")
    with pytest.raises(MultihostError, match="only policies with ingress or egress zone 'HOST'"):
        fw.add_policy("fwd", ingress="internal", egress="external")
    with pytest.raises(MultihostError, match="target 'DROP' is not supported"):
        fw.add_policy("all", ingress="HOST", target="DROP")


def test_compat_firewall__teardown_removes_the_rules_at_once() -> None:
    fw, conn, journal = _firewall()
    fw.setup()
    fw.outbound.reject_port(443)
    fw.teardown()
    assert _rules(conn)[-1] == "nft delete rule inet mh_firewall output handle 11"
    del conn.commands[:]
    journal.close("test")
    assert _rules(conn) == []  # already gone: the journal only drops the table
    assert conn.commands == ["nft delete table inet mh_firewall"]


def test_compat_firewall__no_backend_is_a_clear_error() -> None:
    fw, _, _ = _firewall("")
    with pytest.raises(MultihostError, match="host 'client1': the firewall needs nft or iptables"):
        fw.inbound.drop_port(22)


# -- Windows ------------------------------------------------------------------------------------------------


def test_compat_firewall__windows_firewall_is_refused_naming_the_host() -> None:
    host = MultihostHost("win1", roles=("ad",), domain="default", variables={"mh_hostname": "dc.ad.test"})
    with pytest.raises(MultihostError, match=r"host 'dc\.ad\.test': WindowsFirewall is not supported.*use Firewalld"):
        WindowsFirewall(host)
    with pytest.raises(MultihostError, match="WindowsFirewall is not supported"):
        WindowsFirewallInboundRules(host)  # type: ignore[arg-type]
    with pytest.raises(MultihostError, match="WindowsFirewall is not supported"):
        WindowsFirewallOutboundRules(host)  # type: ignore[arg-type]
