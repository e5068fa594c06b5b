"""pytest-mh's utilities through the compatibility layer, on lab hosts.

Tiny pytest-mh-style suites (``pytest_mh`` imports only) run with ``-p pytest_mh_ansible.compat.plugin``
on a lab of a systemd client (journald) and a sysv server. The first renames the client, delays its
traffic to the server and searches the client's journal; afterwards the hostname and the tc qdiscs of
both hosts, read over plain ssh, must be as before the run. The second uses ``LinuxFileSystem``
(``StatEntry``, ``with fs:``, uploads and downloads), ``SystemdServices`` (``async_*``, a unit started
and stopped many times) and a postponed ``LinuxTrafficControl`` with pytest-mh's names and parameters;
afterwards the files and services it touched must be as before.
"""

from __future__ import annotations

import re
import subprocess
import textwrap
from collections.abc import Iterator

import pytest
from compat_suite_text import conftest
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec, dummy_init_script

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


API_CONFTEST = conftest(
    """
    from pytest_mh.utils.fs import LinuxFileSystem
    from pytest_mh.utils.services import SystemdServices
    from pytest_mh.utils.tc import LinuxTrafficControl
    """,
    """
    self.fs = LinuxFileSystem(self.host)
    self.svc = SystemdServices(self.host)
    self.tc = LinuxTrafficControl(self.host).postpone_setup()
    """,
)

API_TESTS = textwrap.dedent("""
    import tarfile

    import pytest
    from pytest_mh import Topology, TopologyDomain, TopologyMark
    from pytest_mh.conn import Process, ProcessError
    from pytest_mh.utils.fs import StatEntry

    NETEM = {netem}
    DEMO = {demo!r}
    PAIR = TopologyMark(
        name="pair",
        topology=Topology(TopologyDomain("default", client=1, server=1)),
        fixtures=dict(client="default.client[0]", server="default.server[0]"),
    )
    SLEEP = "[Service]\\nType=simple\\nExecStart=/bin/sleep 100000\\n"
    FAIL = "[Service]\\nType=oneshot\\nExecStart=/bin/false\\n"


    @pytest.mark.topology(PAIR)
    def test_fs_1__stat_with_block_uploads_downloads(client, server, tmp_path):
        for role in (client, server):
            fs = role.fs
            fs.write("/etc/mhcu-api.conf", "hello", mode="0640", user="nobody", group="nogroup")
            entry = fs.stat("/etc/mhcu-api.conf")
            assert isinstance(entry, StatEntry)
            assert (entry.file, entry.file_type, entry.size) == ("/etc/mhcu-api.conf", "regular file", 5)
            assert (entry.access, entry.flags, entry.user, entry.group) == ("0640", "-rw-r-----", "nobody", "nogroup")
            assert entry.modify_time_epoch is not None
            assert fs.stat("/etc").file_type == "directory"
            with fs:
                fs.write("/etc/mhcu-api.conf", "inner")
                fs.mkdir_p("/etc/mhcu-api.d/sub")
                assert fs.backup("/etc/mhcu-api-missing") is False
                role.host.conn.run("echo made > /etc/mhcu-api-missing")
            assert fs.read("/etc/mhcu-api.conf") == "hello"
            assert not fs.exists("/etc/mhcu-api.d")
            assert not fs.exists("/etc/mhcu-api-missing")
            fs.copy("/etc/mhcu-api.conf", "/etc/mhcu-api.copy", mode="0600", user="root", group="root")
            copy = fs.stat("/etc/mhcu-api.copy")
            assert (copy.access, copy.user, copy.size) == ("0600", "root", 5)
            local = tmp_path / "local.bin"
            local.write_bytes(bytes(range(256)))
            remote = fs.upload_to_tmp(str(local), mode="0644")
            assert fs.stat(remote).size == 256
            fs.upload(local_path=str(local), remote_path="/etc/mhcu-api.bin")
            fs.download(remote_path="/etc/mhcu-api.bin", local_path=str(tmp_path / "back.bin"))
            assert (tmp_path / "back.bin").read_bytes() == bytes(range(256))
            fs.download_files(["/etc/mhcu-api.c*", "/etc/hostname"], str(tmp_path / "files.tgz"))
            with tarfile.open(tmp_path / "files.tgz") as tar:
                assert sorted(tar.getnames()) == ["etc/hostname", "etc/mhcu-api.conf", "etc/mhcu-api.copy"]
            assert fs.wc("/etc/mhcu-api.conf", bytes=True).stdout.split()[0] == "5"
            assert fs.sed("s/hello/bye/", "/etc/mhcu-api.conf").stdout == "bye"
            role.host.conn.run(f"echo {{remote}} > /tmp/mhcu-api-remote")


    @pytest.mark.topology(PAIR)
    def test_fs_2__all_put_back(client, server):
        for role in (client, server):
            remote = role.host.conn.run("cat /tmp/mhcu-api-remote").stdout
            for path in ("/etc/mhcu-api.conf", "/etc/mhcu-api.copy", "/etc/mhcu-api.bin", remote):
                assert not role.fs.exists(path), path


    def sleep_unit(client):
        client.fs.write("/etc/systemd/system/mhcu-sleep.service", SLEEP)
        client.fs.write("/etc/systemd/system/mhcu-fail.service", FAIL)
        client.svc.reload_daemon()


    @pytest.mark.topology(PAIR)
    def test_svc_1__start_stop_many_times_never_hits_the_start_limit(client, server):
        sleep_unit(client)
        # The control: without reset-failed, systemd refuses the sixth restart within 10 s.
        results = [client.host.conn.run("systemctl restart mhcu-sleep", raise_on_error=False) for _ in range(8)]
        assert any("too often" in r.stderr for r in results), [r.stderr for r in results]
        assert client.svc.get_property("mhcu-sleep", "Result") == "start-limit-hit"
        client.host.conn.run("systemctl stop mhcu-sleep")
        for _ in range(10):
            assert client.svc.restart("mhcu-sleep").rc == 0
        assert client.svc.get_property("mhcu-sleep", "Result") == "success"
        for _ in range(10):
            assert client.svc.start("mhcu-fail", raise_on_error=False).rc != 0
            assert client.svc.get_property("mhcu-fail", "Result") == "exit-code"
        with pytest.raises(ProcessError):
            client.svc.start("mhcu-fail")
        for _ in range(10):
            assert client.svc.start("mhcu-sleep").rc == 0
            assert client.svc.is_active("mhcu-sleep")
            assert client.svc.stop("mhcu-sleep").rc == 0
        assert client.svc.restart("mhcu-sleep").rc == 0
        assert client.svc.initial_states == {{"mhcu-fail": False, "mhcu-sleep": False}}
        assert client.svc.status("mhcu-sleep").rc == 0


    @pytest.mark.topology(PAIR)
    def test_svc_2__async_processes(client, server):
        sleep_unit(client)
        started = client.svc.async_start("mhcu-sleep")
        assert isinstance(started, Process)
        assert started.wait().rc == 0
        assert client.svc.is_active("mhcu-sleep")
        state = client.svc.async_get_property("mhcu-sleep", "ActiveState")
        assert state.wait().stdout == "active"
        with client.svc.async_stop("mhcu-sleep") as stopping:
            pass
        assert not stopping.in_progress
        assert client.svc.async_status("mhcu-sleep").wait(raise_on_error=False).rc == 3
        assert client.svc.async_restart("mhcu-sleep").wait().rc == 0
        assert client.svc.async_reload_daemon().wait().rc == 0
        client.svc.stop("mhcu-sleep")


    @pytest.mark.topology(PAIR)
    def test_svc_3__sysv_service_commands(client, server):
        server.fs.write("/etc/init.d/mhcu-demo", DEMO, mode="0755")
        assert not server.svc.is_active("mhcu-demo")
        assert server.svc.start("mhcu-demo").rc == 0
        assert server.svc.is_active("mhcu-demo")
        assert server.svc.stop("mhcu-demo").rc == 0
        assert server.svc.status("mhcu-demo", raise_on_error=False).rc == 3
        server.svc.restart("mhcu-demo")  # left running: stopped again after the test
        assert server.svc.is_active("mhcu-demo")
        server.host.conn.run("cp /etc/init.d/mhcu-demo /tmp/mhcu-demo")  # for the next test


    @pytest.mark.topology(PAIR)
    def test_svc_4__services_put_back(client, server):
        assert not client.svc.is_active("mhcu-sleep")
        assert not client.fs.exists("/etc/systemd/system/mhcu-sleep.service")
        assert server.host.conn.run("sh /tmp/mhcu-demo status", raise_on_error=False).rc == 3


    @pytest.mark.topology(PAIR)
    def test_tc_postponed(client, server):
        tc = client.tc
        assert tc.postpone_setup() is tc
        assert tc.get_artifacts_list(client.host, "test") == set()
        assert tc.pytest_report_teststatus(None, None) is None
        if NETEM:
            tc.add_delay(server, 50)
            assert "netem" in client.host.conn.run("tc qdisc show").stdout
            tc.remove_delay(server)
""")


def test_compat_utils__fs_services_tc_with_pytest_mh_s_api(pytester: pytest.Pytester, lab: Lab) -> None:
    script = "ls /etc/mhcu-api* /etc/systemd/system/mhcu-* /etc/init.d/mhcu-* 2>/dev/null; echo; tc qdisc show"
    before = {host: lab.run_inside(host, script).stdout for host in ("client1", "server1")}
    pytester.makeconftest(API_CONFTEST)
    pytester.makepyfile(test_api=API_TESTS.format(netem=_netem_available(), demo=dummy_init_script("mhcu-demo")))
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
    outcomes = dict(re.findall(r"^test_api\.py::(\w+)\[pair\] (PASSED|FAILED|ERROR|SKIPPED)", text, re.MULTILINE))
    assert len(outcomes) == 7, text
    assert set(outcomes.values()) == {"PASSED"}, text
    assert {host: lab.run_inside(host, script).stdout for host in ("client1", "server1")} == before
