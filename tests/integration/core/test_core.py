"""The core plugin on real lab hosts: inventories, role fixtures, commands, become, vault, xdist."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from core_helpers import connection_line, vault_encrypt

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

PAIR = """
import pytest
from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

PAIR = TopologyMark(
    "pair",
    Topology(TopologyDomain("app", client=1, server=1)),
    fixtures=dict(client="app.client[0]", server="app.server[0]"),
)
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def test_core__the_issue_example_passes_with_the_lab_inventory(pytester: pytest.Pytester, core_lab: Lab) -> None:
    pytester.makepyfile(
        test_pair=PAIR
        + textwrap.dedent("""
        @pytest.mark.topology(PAIR)
        def test_server_reachable(client, server):
            result = client.host.conn.run(f"getent hosts {server.host.hostname}", raise_on_error=False)
            assert result.rc == 0
            assert server.host.address in result.stdout
    """)
    )
    result = run(pytester, "-i", str(core_lab.inventory_path), "-o", "mh_default_domain=app", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["test_pair.py::test_server_reachable[[]pair[]] PASSED*"])


VARS_TEST = PAIR + textwrap.dedent("""
    @pytest.mark.topology(PAIR)
    def test_vars_and_commands(client, server):
        assert client.host.domain == "app"
        assert client.host.vars["app_marker"] == "from-group-vars"
        assert server.host.vars["host_marker"] == "server1-only"
        assert "host_marker" not in client.host.vars
        assert server.host.conn.run("hostname").stdout.strip() == "server1"
        assert client.host.conn.run("hostname").stdout.strip() == "client1"
""")


def _write_inventory(kind: str, base: Path, hosts: dict[str, dict[str, Any]]) -> str:
    group_vars = {"mh_domain": "app", "app_marker": "from-group-vars"}
    host_vars = {"host_marker": "server1-only"}
    if kind == "ini":
        lines = ["[client]", f"client1 {connection_line(hosts['client1'])}", "", "[server]"]
        lines += [f"{name} {connection_line(hosts[name])}" for name in ("server1", "server2")]
        (base / "hosts.ini").write_text("\n".join(lines) + "\n")
        source = "hosts.ini"
        vars_dir = base
    elif kind == "yaml":
        inventory = {
            "all": {
                "children": {
                    "client": {"hosts": {"client1": hosts["client1"]}},
                    "server": {"hosts": {"server1": hosts["server1"], "server2": hosts["server2"]}},
                }
            }
        }
        (base / "hosts.yml").write_text(yaml.safe_dump(inventory))
        source = "hosts.yml"
        vars_dir = base
    else:  # a directory: two files, with group_vars/ and host_vars/ inside
        vars_dir = base / "inventory"
        vars_dir.mkdir()
        (vars_dir / "10-client.yml").write_text(yaml.safe_dump({"client": {"hosts": {"client1": hosts["client1"]}}}))
        (vars_dir / "20-server.yml").write_text(
            yaml.safe_dump({"server": {"hosts": {"server1": hosts["server1"], "server2": hosts["server2"]}}})
        )
        source = "inventory"
    (vars_dir / "group_vars").mkdir()
    (vars_dir / "group_vars" / "all.yml").write_text(yaml.safe_dump(group_vars))
    (vars_dir / "host_vars").mkdir()
    (vars_dir / "host_vars" / "server1.yml").write_text(yaml.safe_dump(host_vars))
    return source


@pytest.mark.parametrize("kind", ["ini", "yaml", "directory"])
def test_core__same_tests_from_ini_yaml_and_directory_inventories(
    pytester: pytest.Pytester, lab_vars: dict[str, dict[str, Any]], kind: str
) -> None:
    hosts = {
        name: {k: v for k, v in values.items() if not k.startswith(("mh_lab", "ansible_become"))}
        for name, values in lab_vars.items()
    }
    source = _write_inventory(kind, pytester.path, hosts)
    pytester.makepyfile(test_vars=VARS_TEST)
    run(pytester, "-i", source).assert_outcomes(passed=1)


COMMANDS_TEST = PAIR + textwrap.dedent("""
    import time
    from pytest_mh_ansible import ProcessError, ProcessTimeoutError

    @pytest.mark.topology(PAIR)
    def test_run_input_env_cwd(server):
        conn = server.host.conn
        result = conn.run("cat; echo err >&2", input="from stdin\\n")
        assert result.stdout == "from stdin\\n"
        assert result.stderr == "err\\n"
        assert conn.run('echo "$GREETING"', env={"GREETING": "hello world"}).stdout == "hello world\\n"
        assert conn.run("pwd", cwd="/etc").stdout.strip() == "/etc"
        assert conn.run("printf 'a\\\\nb\\\\n'").stdout_lines == ["a", "b"]

    @pytest.mark.topology(PAIR)
    def test_errors_carry_host_command_and_output(server):
        with pytest.raises(ProcessError) as info:
            server.host.conn.run("echo oops >&2; exit 3")
        assert info.value.rc == 3
        assert info.value.host == "server1"
        assert "oops" in str(info.value) and "exit 3" in str(info.value)
        assert server.host.conn.run("exit 4", raise_on_error=False).rc == 4

    @pytest.mark.topology(PAIR)
    def test_timeout_kills_the_command_on_the_host(server):
        started = time.monotonic()
        with pytest.raises(ProcessTimeoutError) as info:
            server.host.conn.run("sleep 300 # mh-timeout-marker", timeout=1)
        assert time.monotonic() - started < 15
        assert info.value.timeout == 1
        time.sleep(0.5)
        left = server.host.conn.run("pgrep -f '[m]h-timeout-marker'", raise_on_error=False)
        assert left.rc == 1, left.stdout

    @pytest.mark.topology(PAIR)
    def test_put_and_get(server, tmp_path):
        data = bytes(range(256)) * 64
        (tmp_path / "up.bin").write_bytes(data)
        server.host.conn.put(tmp_path / "up.bin", "/tmp/up.bin")
        digest = __import__("hashlib").sha256(data).hexdigest()
        assert server.host.conn.run("sha256sum /tmp/up.bin").stdout.split()[0] == digest
        server.host.conn.get("/tmp/up.bin", tmp_path / "down.bin")
        assert (tmp_path / "down.bin").read_bytes() == data
        server.host.conn.run("rm -f /tmp/up.bin")
""")


def _ssh_processes(addresses: set[str], tmpdir: str) -> set[str]:
    """ssh processes to these addresses, and ControlMasters in ``tmpdir`` ("ssh: <tmpdir>/mh-cp-.../<hash> [mux]")."""
    processes = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return {
        line.strip()
        for line in processes.splitlines()
        if "ssh" in line and (f"{tmpdir}/mh-cp-" in line or any(address in line.split() for address in addresses))
    }


def test_core__commands_on_lab_hosts(pytester: pytest.Pytester, core_lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    addresses = {host.address for host in core_lab.hosts}
    # The session's ControlMaster directories go to a TMPDIR of its own: another xdist worker's masters
    # are not this session's. Short, as a socket path is (108 bytes).
    tmpdir = tempfile.mkdtemp(prefix="mhc", dir="/tmp")
    monkeypatch.setenv("TMPDIR", tmpdir)
    try:
        before = _ssh_processes(addresses, tmpdir)
        pytester.makepyfile(test_cmds=COMMANDS_TEST)
        result = run(pytester, "-i", str(core_lab.inventory_path), "-o", "mh_default_domain=app", "-v")
        result.assert_outcomes(passed=4)
        # The session closed its connections: no ssh process (ControlMaster included) of it is left.
        left = _ssh_processes(addresses, tmpdir) - before
        assert left == set()
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


BECOME_TEST = textwrap.dedent("""
    import pytest
    from pytest_mh_ansible import ProcessError

    @pytest.mark.topology(server=1)
    def test_become(server):
        conn = server.host.conn
        assert conn.run("id -un").stdout.strip() == "labuser"
        assert conn.run("id -un", become=True).stdout.strip() == "root"
        assert conn.run("cat /etc/shadow", become=True).rc == 0
        secret = server.host.vars["ansible_password"]
        with pytest.raises(ProcessError) as info:
            conn.run(f"echo {secret}; echo {secret} >&2; exit 2")
        assert secret not in str(info.value)
        assert "********" in str(info.value)
        raise AssertionError(f"show the masked output: {secret}")
""")


def test_core__become_from_a_vaulted_password_and_secrets_masked(
    pytester: pytest.Pytester, core_lab: Lab, lab_vars: dict[str, dict[str, Any]]
) -> None:
    server = lab_vars["server1"]
    password = str(server["mh_lab_user_password"])
    vault_file = pytester.path / "vault-pass.txt"
    vault_file.write_text("vault-pw-for-tests\n")
    (pytester.path / "hosts.ini").write_text(
        "[server]\nserver1 " + connection_line(server).replace("ansible_user=root", "ansible_user=labuser") + "\n"
    )
    (pytester.path / "group_vars").mkdir()
    (pytester.path / "group_vars" / "server.yml").write_text(
        vault_encrypt(password, vault_file, "ansible_password")
        + vault_encrypt(password, vault_file, "ansible_become_password")
    )
    pytester.makepyfile(test_become=BECOME_TEST)
    result = run(pytester, "-i", "hosts.ini", "--mh-vault-password-file", str(vault_file))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: show the masked output: [*][*][*][*][*][*][*][*]"])
    output = result.stdout.str() + result.stderr.str()
    assert password not in output
    # Without the vault password, the inventory cannot be read: a usage error naming the file.
    result = run(pytester, "-i", "hosts.ini")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*group_vars/server.yml*no vault password given*"])
    assert password not in result.stdout.str() + result.stderr.str()


XDIST_TEST = PAIR + textwrap.dedent("""
    @pytest.mark.topology(PAIR)
    @pytest.mark.parametrize("n", range(6))
    def test_exclusive(server, n):
        # mkdir is atomic: it fails if another worker is inside the same host right now.
        server.host.conn.run("mkdir /tmp/mh-xdist-inuse")
        try:
            server.host.conn.run("sleep 0.3")
        finally:
            server.host.conn.run("rmdir /tmp/mh-xdist-inuse")
""")


def test_core__xdist_workers_never_use_one_host_at_once(pytester: pytest.Pytester, core_lab: Lab) -> None:
    pytester.makepyfile(test_x=XDIST_TEST)
    result = run(
        pytester,
        "-i",
        str(core_lab.inventory_path),
        "-o",
        "mh_default_domain=app",
        "-p",
        "xdist",
        "-n",
        "2",
        "-p",
        "no:benchmark",
    )
    result.assert_outcomes(passed=6)
