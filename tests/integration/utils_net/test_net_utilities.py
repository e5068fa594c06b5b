"""Firewall, traffic control, logs and crash detection on lab hosts: effect during the test, clean host after it."""

from __future__ import annotations

import re
import textwrap

import pytest

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

TESTS = textwrap.dedent("""
    import time
    import pytest
    from pytest_mh_ansible import MultihostError, Topology, TopologyDomain, TopologyMark

    NET = TopologyMark(
        "net",
        Topology(TopologyDomain("default", client=1, server=2)),
        fixtures=dict(client="default.client[0]", server1="default.server[0]", server2="default.server[1]"),
    )
    STATE = {}
    FETCH = (
        "python3 -c \\"import time,urllib.request as u;t=time.time();"
        "u.urlopen('http://{0}:8000/blob',timeout=30).read();print(time.time()-t)\\""
    )

    def state(host):
        # iptables rules only: iptables-nft leaves the empty built-in filter table it created on first use
        # (chains with policy ACCEPT), which the firewall utility cannot remove without nft.
        return host.conn.run(
            "nft list ruleset; iptables-save | grep '^-'; ip6tables-save | grep '^-'; tc qdisc show; "
            "for d in $(ls /sys/class/net); do tc filter show dev $d; done",
            raise_on_error=False,
        ).stdout

    def reach(client, server):
        return client.host.conn.run(
            f"python3 -c \\"import socket; socket.create_connection(('{server.host.hostname}', 8000), 3)\\"",
            raise_on_error=False,
        ).succeeded

    def fetch(client, server):
        return float(client.host.conn.run(FETCH.format(server.host.hostname), timeout=60).stdout)

    @pytest.mark.topology(NET)
    def test_00_start_servers(client, server1, server2):
        # From the lab's offline cache, outside the journal (kept for the lab's life): nft on client1,
        # iptables only on server2, so that both backends are used.
        apt = "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-download --no-install-recommends "
        client.host.conn.run(apt + "nftables iptables", timeout=300)
        server2.host.conn.run(apt + "iptables", timeout=300)
        for server in (server1, server2):
            server.host.conn.run(
                "mkdir -p /srv/www && head -c 400000 /dev/zero > /srv/www/blob && cd /srv/www && "
                "(nohup python3 -m http.server 8000 >/dev/null 2>&1 &) ; sleep 1"
            )
        assert reach(client, server1) and reach(client, server2)
        STATE["client"] = state(client.host)
        STATE["server2"] = state(server2.host)
        STATE["server1"] = state(server1.host)
        STATE["fast"] = fetch(client, server1)

    @pytest.mark.topology(NET)
    def test_01_firewall_blocks_server1_then_fails(client, server1, server2):
        client.firewall.outbound.reject_host(server1)
        client.firewall.inbound.reject_port(9999)
        server2.firewall.inbound.drop_port(7777, "udp")
        assert client.firewall.backend == "nft"
        assert server2.firewall.backend == "iptables"
        assert "MH_INPUT -p udp -m udp --dport 7777 -j DROP" in server2.firewall.rules()
        assert not reach(client, server1)
        assert reach(client, server2)
        assert "mh_firewall" in client.firewall.rules() or "MH_OUTPUT" in client.firewall.rules()
        assert False, "failing on purpose"

    @pytest.mark.topology(NET)
    def test_02_firewall_reverted(client, server1, server2):
        assert state(client.host) == STATE["client"]
        assert state(server2.host) == STATE["server2"]
        assert reach(client, server1) and reach(client, server2)

    @pytest.fixture
    def blocked(client, server1):
        client.firewall.outbound.drop_host(server1)
        raise RuntimeError("fixture fails on purpose")

    @pytest.mark.topology(NET)
    def test_03_firewall_failing_fixture(client, blocked):
        pass

    @pytest.mark.topology(NET)
    def test_04_firewall_reverted_after_failing_fixture(client, server1):
        assert state(client.host) == STATE["client"]
        assert reach(client, server1)

    @pytest.mark.topology(NET)
    def test_05_tc_rate_limit_then_fails(client, server1, server2):
        server1.tc.limit_rate(client, "1mbit")  # what server1 sends to the client: the download
        slow = fetch(client, server1)
        assert slow > 1.5 and slow > 5 * STATE["fast"], (slow, STATE["fast"])
        assert fetch(client, server2) < 1.0
        with pytest.raises(MultihostError, match="sch_netem"):
            server1.tc.add_delay(server2, 100)
        assert False, "failing on purpose"

    @pytest.mark.topology(NET)
    def test_06_tc_reverted(client, server1):
        assert state(server1.host) == STATE["server1"]
        assert fetch(client, server1) < 1.0

    @pytest.fixture
    def slowed(client, server1):
        server1.tc.limit_rate(client, "256kbit")
        raise RuntimeError("fixture fails on purpose")

    @pytest.mark.topology(NET)
    def test_07_tc_failing_fixture(client, slowed):
        pass

    @pytest.mark.topology(NET)
    def test_08_tc_reverted_after_failing_fixture(server1):
        assert state(server1.host) == STATE["server1"]

    @pytest.mark.topology(NET)
    def test_09_logs_follow(server1):
        server1.host.conn.run("echo before > /var/log/mh-app.log")
        server1.logs.follow("/var/log/mh-app.log")

    @pytest.mark.topology(NET)
    def test_10_logs_only_new_lines_and_no_journald(server1):
        server1.host.conn.run("echo during >> /var/log/mh-app.log")
        assert server1.logs.file("/var/log/mh-app.log") == "during\\n"
        assert "before" in server1.logs.file("/var/log/mh-app.log", since_test_start=False)
        with pytest.raises(MultihostError, match="no journald"):
            server1.logs.journal()
        server1.host.conn.run("rm -f /var/log/mh-app.log")

    @pytest.mark.topology(NET)
    def test_11_crash(server2):
        pattern = server2.host.conn.run("cat /proc/sys/kernel/core_pattern").stdout.strip()
        if pattern.startswith("|"):
            pytest.skip(f"core_pattern {pattern!r} pipes cores to a handler the lab hosts cannot read")
        conn = server2.host.conn
        server2.host.journal.record(server2.host, "core files in /tmp", lambda: conn.run("rm -f /tmp/core*"))
        conn.run("cd /tmp && ulimit -c unlimited && { sleep 100 & p=$!; sleep .3; kill -SEGV $p; wait $p; }; true")

    @pytest.mark.topology(NET)
    def test_12_no_crash(server2):
        assert not server2.crashes.check()

    @pytest.mark.topology(NET)
    def test_13_stop_servers(server1, server2):
        for server in (server1, server2):
            server.host.conn.run("pkill -f 'http[.]server 8000' || true")
""")


def test_utils_net__changes_take_effect_and_are_reverted(pytester: pytest.Pytester, utils_lab: Lab) -> None:
    pytester.makepyfile(test_net=TESTS)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        f"--mh-inventory={utils_lab.inventory_path}",
        "-p",
        "no:randomly",
        "-o",
        "mh_crashes=fail",
        "-v",
        "-rA",
    )
    text = result.stdout.str()
    outcomes = dict(re.findall(r"^test_net\.py::(\w+)\[net\] (PASSED|FAILED|ERROR|SKIPPED)", text, re.MULTILINE))
    expected_failed = {"test_01_firewall_blocks_server1_then_fails", "test_05_tc_rate_limit_then_fails"}
    expected_error = {"test_03_firewall_failing_fixture", "test_07_tc_failing_fixture"}
    for name, outcome in outcomes.items():
        if name in expected_failed:
            assert outcome == "FAILED", (name, text)
        elif name in expected_error:
            assert outcome == "ERROR", (name, text)
        elif name == "test_11_crash":
            assert outcome in ("FAILED", "SKIPPED"), (name, text)
        else:
            assert outcome == "PASSED", (name, text)
    assert len(outcomes) == 14, text
    assert "failing on purpose" in text
    if outcomes["test_11_crash"] == "FAILED":
        assert "crashes on the test's hosts (mh_crashes = fail)" in text
        assert "server2: core: /tmp/core" in text
