"""pytest-mh's firewall utility through the compatibility layer, on lab hosts.

A tiny pytest-mh-style suite (``pytest_mh`` imports only) runs with ``-p pytest_mh_ansible.compat.plugin``
on a lab of two sysv hosts: the client gets nftables, the server iptables only (nftables purged there if
the machine under the lab has it), so that both backends are used. It blocks traffic with
``Firewalld``'s inbound, outbound and rich-rule API and checks with TCP connects between the hosts that
it is really blocked (refused or timed out) and let through again; one test fails on purpose with its
rules in place. Afterwards, over plain ssh, no rule of ours is left on either host and the client
reaches the server again.
"""

from __future__ import annotations

import re
import subprocess
import textwrap
from collections.abc import Iterator

import pytest
from compat_suite_text import conftest
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

pytestmark = pytest.mark.integration

LAB_NAME = lab_name("mhcfw")

CONFTEST = conftest(
    """
    from pytest_mh.utils.firewall import Firewalld
    """,
    """
    self.firewall = Firewalld(self.host)
    """,
)

TESTS = textwrap.dedent("""
    import pytest
    from pytest_mh import Topology, TopologyDomain, TopologyMark
    from pytest_mh.utils.firewall import Firewalld, WindowsFirewall
    from pytest_mh_ansible import MultihostError

    PAIR = TopologyMark(
        name="pair",
        topology=Topology(TopologyDomain("default", client=1, server=1)),
        fixtures=dict(client="default.client[0]", server="default.server[0]"),
    )
    # "ok", "refused" (reject: an answer at once) or "timeout" (drop: no answer) of a TCP connect.
    CONNECT = (
        "python3 -c \\"import socket,sys\\n"
        "try:\\n"
        "    socket.create_connection(sys.argv[1:3], 2).close(); print('ok')\\n"
        "except socket.timeout: print('timeout')\\n"
        "except OSError: print('refused')\\" {0} {1}"
    )
    LISTEN = "(nohup python3 -m http.server 8080 >/dev/null 2>&1 &); sleep 1"


    def connect(src, dst, port=8080):
        return src.host.conn.run(CONNECT.format(dst.host.hostname, port)).stdout.strip()


    def ours(role):
        return role.host.conn.run(
            "PATH=$PATH:/usr/sbin; nft list tables 2>/dev/null; iptables-save 2>/dev/null | grep MH_",
            raise_on_error=False,
        ).stdout


    @pytest.mark.topology(PAIR)
    def test_00_install_and_listen(client, server):
        # From the lab's offline cache, outside the journal: nft on the client, iptables only on the server.
        apt = "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-download --no-install-recommends "
        client.host.conn.run(apt + "nftables iptables", timeout=300)
        server.host.conn.run(apt + "iptables", timeout=300)
        client.host.conn.run(LISTEN)
        server.host.conn.run(LISTEN)
        assert connect(client, server) == "ok"
        assert connect(server, client) == "ok"
        assert client.firewall.backend == "nft"
        assert server.firewall.backend == "iptables"


    @pytest.mark.topology(PAIR)
    def test_01_outbound_on_nft(client, server):
        client.firewall.outbound.reject_host(server)
        assert connect(client, server) == "refused"
        assert connect(client, server, 22) == "refused"
        # Every packet to the server is refused, the replies to its own connects too (no conntrack exception).
        assert connect(server, client) == "timeout"
        client.firewall.outbound.accept_host(server.host)  # newer rule wins
        assert connect(client, server) == "ok"
        client.firewall.outbound.drop_port("http-alt")  # a service: 8080/tcp
        assert connect(client, server) == "timeout"
        assert connect(client, server, 22) == "ok"
        assert "mh_firewall" in ours(client)


    @pytest.mark.topology(PAIR)
    def test_02_reverted_on_nft(client, server):
        assert "mh_firewall" not in ours(client)
        assert connect(client, server) == "ok"
        assert connect(client, server, 22) == "ok"


    @pytest.mark.topology(PAIR)
    def test_03_inbound_and_rich_rules_on_iptables(client, server):
        server.firewall.inbound.reject_port(8080)
        assert connect(client, server) == "refused"
        assert connect(client, server, 22) == "ok"
        server.firewall.inbound.accept_port([(8080, "tcp")])
        assert connect(client, server) == "ok"
        server.firewall.inbound.drop_port(8080)
        assert connect(client, server) == "timeout"
        assert "MH_INPUT" in server.firewall.rules()

        address = client.host.conn.run("getent ahostsv4 client1 | head -n1 | cut -d' ' -f1").stdout.strip()
        rule = f'family="ipv4" destination address="{address}" port port="8080" protocol="tcp" reject'
        priority = server.firewall.add_rich_rule(rule)
        assert connect(server, client) == "refused"
        assert connect(server, client, 22) == "ok"
        server.firewall.remove_rich_rule(priority, rule)
        assert connect(server, client) == "ok"
        with pytest.raises(MultihostError, match="not supported"):
            server.firewall.add_rich_rule("forward-port port=80 protocol=tcp to-port=8080")


    @pytest.mark.topology(PAIR)
    def test_04_reverted_on_iptables(client, server):
        assert "MH_" not in ours(server)
        assert connect(client, server) == "ok"


    @pytest.mark.topology(PAIR)
    def test_05_fails_with_rules_in_place(client, server):
        client.firewall.outbound.drop_host(server)
        server.firewall.inbound.reject_port([8080, (22, "udp")])
        assert connect(client, server) == "timeout"
        assert False, "failing on purpose"


    @pytest.mark.topology(PAIR)
    def test_06_reverted_after_the_failure(client, server):
        assert "mh_firewall" not in ours(client)
        assert "MH_" not in ours(server)
        assert connect(client, server) == "ok"
        with pytest.raises(MultihostError, match="'server1'.*not supported.*use Firewalld"):
            WindowsFirewall(server.host)
""")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """client1 and server1 (sysv), with nftables and iptables installable from the lab's cache."""
    spec = LabSpec(
        name=LAB_NAME,
        hosts=(LabHostSpec("client1", roles=("client",)), LabHostSpec("server1", roles=("server",))),
        packages=("nftables", "iptables"),
    )
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        iptables_only(lab, "server1")
        yield lab


# Lab hosts are overlays of the machine's own root filesystem: on a machine with nftables installed,
# the server would find nft and use it. Purged there (offline: dpkg only), whatever the machine has.
IPTABLES_ONLY = (
    "export PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive;"
    " if dpkg-query -W -f='${db:Status-Status}' nftables 2>/dev/null | grep -qx installed;"
    " then apt-get purge -y -q nftables >/dev/null || exit 1; fi;"
    " ! command -v nft"
)


def iptables_only(lab: Lab, host: str) -> None:
    """Leave ``host`` without nftables (its ``nft``), so that the firewall's iptables backend is the one used."""
    done = lab.run_inside(host, IPTABLES_ONLY, timeout=300)
    assert done.returncode == 0, f"{host}: nftables could not be removed: {done.stdout}{done.stderr}"


def _ssh(lab: Lab, host: str, script: str) -> str:
    proc = subprocess.run(
        ["ssh", "-F", str(lab.ssh_config_path), host, script], capture_output=True, text=True, check=True, timeout=60
    )
    return proc.stdout


def _rules(lab: Lab, host: str) -> str:
    """Every nftables table and iptables/ip6tables rule of the host, read over plain ssh."""
    script = (
        "PATH=$PATH:/usr/sbin; nft list tables 2>/dev/null; "
        "iptables-save 2>/dev/null | grep '^[-:]'; ip6tables-save 2>/dev/null | grep '^[-:]'; true"
    )
    return _ssh(lab, host, script)


def test_compat_firewall__blocks_traffic_and_leaves_no_rule(pytester: pytest.Pytester, lab: Lab) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_firewall=TESTS)
    result = pytester.runpytest_subprocess(
        "-p",
        "pytest_mh_ansible.compat.plugin",
        f"--mh-inventory={lab.inventory_path}",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-v",
        "-rA",
    )
    text = result.stdout.str()
    outcomes = dict(re.findall(r"^test_firewall\.py::(\w+)\[pair\] (PASSED|FAILED|ERROR)", text, re.MULTILINE))
    expected = {f"test_0{i}": "PASSED" for i in range(7)}
    assert {name[:7]: outcome for name, outcome in outcomes.items()} == {**expected, "test_05": "FAILED"}, text
    assert "failing on purpose" in text

    client, server = _rules(lab, "client1"), _rules(lab, "server1")
    assert "mh_firewall" not in client, client
    assert "MH_" not in client, client
    assert "MH_" not in server, server
    # The backends really were used (installed by the suite), and the client reaches the server again.
    assert "nft" in _ssh(lab, "client1", "PATH=$PATH:/usr/sbin; command -v nft")
    assert "iptables" in _ssh(lab, "server1", "PATH=$PATH:/usr/sbin; command -v iptables")
    probe = "python3 -c \"import socket; socket.create_connection(('server1', 8080), 5); print('ok')\""
    assert _ssh(lab, "client1", probe).strip() == "ok"
