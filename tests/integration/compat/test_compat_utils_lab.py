"""pytest-mh's hostname, tc and journald utilities through the compatibility layer, on lab hosts.

A tiny pytest-mh-style suite (``pytest_mh`` imports only) runs with ``-p pytest_mh_ansible.compat.plugin``
on a lab of a systemd client (journald) and a sysv server. It renames the client, delays its traffic
to the server and searches the client's journal; afterwards the hostname and the tc qdiscs of both
hosts, read over plain ssh, must be as before the run.
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

LAB_NAME = lab_name("mhcu")

CONFTEST = conftest(
    """
    from pytest_mh.utils.hostname import HostnameUtils
    from pytest_mh.utils.journald import JournaldUtils
    from pytest_mh.utils.tc import LinuxTrafficControl
    """,
    """
    self.hostname = HostnameUtils(self.host)
    self.tc = LinuxTrafficControl(self.host)
    self.journald = JournaldUtils(self.host)
    """,
)

TESTS = textwrap.dedent("""
    import re
    import time

    import pytest
    from pytest_mh import Topology, TopologyDomain, TopologyMark
    from pytest_mh_ansible import MultihostError

    NETEM = {netem}
    PAIR = TopologyMark(
        name="pair",
        topology=Topology(TopologyDomain("default", client=1, server=1)),
        fixtures=dict(client="default.client[0]", server="default.server[0]"),
    )
    CONNECT = (
        "python3 -c \\"import socket,time\\n"
        "ts=[]\\n"
        "for _ in range(5):\\n"
        "    t=time.monotonic(); socket.create_connection(('{{0}}', 22), 10).close(); ts.append(time.monotonic()-t)\\n"
        "print(sorted(ts)[2])\\""
    )


    def connect_time(client, server):
        # The median of 5 TCP connects to the server's sshd: the SYN towards the server carries any delay.
        return float(client.host.conn.run(CONNECT.format(server.host.hostname)).stdout)


    def eventually(check, timeout=10.0):
        end = time.monotonic() + timeout
        while not check():
            if time.monotonic() > end:
                return False
            time.sleep(0.2)
        return True


    @pytest.mark.topology(PAIR)
    def test_hostname_1__renamed_in_the_test(client, server):
        assert client.hostname.name == "client1"
        assert client.hostname.shortname == "client1"
        assert client.hostname.fqdn != ""
        client.hostname.name = "renamed.mhcu.test"
        assert client.hostname.name == "renamed.mhcu.test"
        assert client.hostname.shortname == "renamed"
        assert client.host.conn.run("cat /proc/sys/kernel/hostname").stdout == "renamed.mhcu.test"
        server.hostname.name = "other"


    @pytest.mark.topology(PAIR)
    def test_hostname_2__back_in_the_next_test(client, server):
        assert client.hostname.name == "client1"
        assert server.hostname.name == "server1"


    @pytest.mark.topology(PAIR)
    def test_tc_1__delay_towards_the_server(client, server):
        base = connect_time(client, server)
        if not NETEM:
            # This kernel has no sch_netem: the delay cannot be made; the error says why (root qdisc reverted).
            with pytest.raises(MultihostError, match="sch_netem"):
                client.tc.add_delay(server, "300ms")
            assert "qdisc htb 1: root" in client.host.conn.run("tc qdisc show dev eth0").stdout
            return
        client.tc.add_delay(server, "300ms")
        slow = connect_time(client, server)
        assert slow >= base + 0.25, (base, slow)
        client.tc.remove_delay("server1")
        assert connect_time(client, server) < base + 0.2
        client.tc.add_delay(server.host, 200)  # left for the journal to remove
        assert connect_time(client, server) >= base + 0.15
        assert "netem" in client.host.conn.run("tc qdisc show dev eth0").stdout


    @pytest.mark.topology(PAIR)
    def test_tc_2__removed_after_the_test(client, server):
        assert "htb" not in client.host.conn.run("tc qdisc show dev eth0").stdout
        assert "netem" not in client.host.conn.run("tc qdisc show dev eth0").stdout


    def log(client, text):
        client.host.conn.run(f"echo {{text}} | systemd-cat -t mhcu-app")


    @pytest.mark.topology(PAIR)
    def test_journald_1__since_the_test_start_and_clear(client, server):
        now = client.journald.now
        assert re.fullmatch(r"\\d{{4}}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\.\\d{{9}}", now), now
        log(client, "mhcu-before-clear")
        assert eventually(lambda: client.journald.is_match("mhcu-before-clear"))
        assert client.journald.count("mhcu-before-clear") == 1
        client.journald.clear()
        assert not client.journald.is_match("mhcu-before-clear")
        log(client, "mhcu-after-clear")
        log(client, "mhcu-after-clear")
        assert eventually(lambda: client.journald.count("mhcu-after-clear") == 2)
        out = client.journald.journalctl(identifier="mhcu-app", output="cat")
        assert out.stdout_lines == ["mhcu-after-clear", "mhcu-after-clear"], out.stdout
        assert client.journald.journalctl(since=now, identifier="mhcu-app", output="cat").stdout_lines == [
            "mhcu-before-clear", "mhcu-after-clear", "mhcu-after-clear"
        ]
        with pytest.raises(MultihostError, match="no journald"):
            server.journald.is_match("anything")


    @pytest.mark.topology(PAIR)
    def test_journald_2__a_new_test_starts_from_its_own_start(client, server):
        assert not client.journald.is_match("mhcu-after-clear")
        assert client.journald.journalctl(current=False, grep="mhcu-after-clear").rc == 0
""")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """client1 (systemd: journald) and server1 (sysv)."""
    spec = LabSpec(
        name=LAB_NAME,
        hosts=(
            LabHostSpec("client1", roles=("client",), init="systemd"),
            LabHostSpec("server1", roles=("server",)),
        ),
    )
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab


def _netem_available() -> bool:
    """Whether the kernel (shared by the lab hosts) has the netem qdisc: tried in a throwaway network namespace."""
    probe = subprocess.run(
        ["unshare", "--net", "sh", "-c", "tc qdisc add dev lo root netem delay 1ms"], capture_output=True, check=False
    )
    return probe.returncode == 0


def _state(lab: Lab, host: str) -> str:
    """The host's name and its qdiscs and filters, read over plain ssh."""
    script = "hostname; tc qdisc show; for d in $(ls /sys/class/net); do tc filter show dev $d; done"
    proc = subprocess.run(
        ["ssh", "-F", str(lab.ssh_config_path), host, script], capture_output=True, text=True, check=True, timeout=60
    )
    return proc.stdout


def test_compat_utils__hostname_tc_journald_through_the_layer(pytester: pytest.Pytester, lab: Lab) -> None:
    before = {host: _state(lab, host) for host in ("client1", "server1")}
    assert before["client1"].startswith("client1\n")
    assert "htb" not in before["client1"]
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_utils=TESTS.format(netem=_netem_available()))
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
    outcomes = dict(re.findall(r"^test_utils\.py::(\w+)\[pair\] (PASSED|FAILED|ERROR|SKIPPED)", text, re.MULTILINE))
    assert len(outcomes) == 6, text
    assert set(outcomes.values()) == {"PASSED"}, text
    assert {host: _state(lab, host) for host in ("client1", "server1")} == before
