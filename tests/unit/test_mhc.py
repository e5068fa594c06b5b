"""``convert-mhc``: a pytest-mh mhc.yaml becomes an inventory that ansible-core reads back as pytest-mh meant."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from pytest_mh_ansible._private.ansible.compat import paramiko_plugin_available
from pytest_mh_ansible._private.ansible.inventory import Inventory
from pytest_mh_ansible._private.cli import main
from pytest_mh_ansible._private.mhc import convert_mhc, read_mhc

MHC = """\
config:
  suite: example
provisioned_topologies: [ldap]
domains:
- id: test
  config: {realm: EXAMPLE}
  hosts:
  - hostname: client1
    role: client
    conn: {type: ssh, host: 192.0.2.1, port: 2222, username: tester, private_key: /keys/id, timeout: 60}
    config: {x: 1}
    artifacts: [/var/log/app.log]
    color: blue
  - hostname: server1
    role: server
    conn: {type: ssh, password: Secret1}
    os: {family: Linux}
- id: ldap
  hosts:
  - hostname: box1
    role: ldap
    conn: {type: podman, container: box1, user: tester, sudo: true}
  - hostname: dock1
    role: client
    conn: {type: docker, container: dock1}
"""


def _convert(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[Path, str]:
    mhc = tmp_path / "mhc.yaml"
    mhc.write_text(MHC)
    out = tmp_path / "hosts.yml"
    assert main(["convert-mhc", str(mhc), "-o", str(out), *args]) == 0
    return out, capsys.readouterr().err


def test_mhc__domains_roles_connections_and_config_as_ansible_reads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, err = _convert(tmp_path, capsys)
    inventory = Inventory.load([str(out)], basedir=str(tmp_path))
    hosts = {host.name: host for host in inventory.hosts}
    client, server, box, dock = hosts["client1"], hosts["server1"], hosts["box1"], hosts["dock1"]
    assert {"test", "client"} <= set(client.groups)
    assert {"ldap_domain", "ldap"} <= set(box.groups)  # the domain's group is renamed: a role has its name
    v = client.variables
    assert (v["mh_domain"], v["mh_role"], v["ansible_host"], v["ansible_port"], v["ansible_user"]) == (
        "test", "client", "192.0.2.1", 2222, "tester",
    )  # fmt: skip
    assert v["ansible_ssh_private_key_file"] == "/keys/id"
    assert (v["mh_config"], v["mh_artifacts"], v["mh_command_timeout"]) == ({"x": 1}, ["/var/log/app.log"], 60)
    assert v["mh_domain_config"] == {"realm": "EXAMPLE"}
    assert v["mh_multihost_config"] == {"suite": "example"}
    s = server.variables
    assert (s["ansible_host"], s["ansible_user"], s["ansible_password"], s["mh_os_family"]) == (
        "server1", "root", "Secret1", "linux",
    )  # fmt: skip
    assert (box.variables["ansible_connection"], box.variables["ansible_host"]) == ("containers.podman.podman", "box1")
    assert dock.variables["ansible_connection"] == "community.docker.docker"
    # keys without an inventory equivalent are kept, as pytest-mh keeps them in its confdict
    assert v["mh_host_keys"] == {"color": "blue"}
    assert v["mh_multihost_keys"] == {"provisioned_topologies": ["ldap"]}
    assert "color" not in err
    assert "'sudo'" in err
    assert any("'sudo'" in line for line in out.read_text().splitlines() if line.startswith("# warning:"))


def test_mhc__passwords_as_vault_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    password_file = tmp_path / "vault-pass"
    password_file.write_text("s3cret\n")
    out, _ = _convert(tmp_path, capsys, "--vault-password-file", str(password_file), "--no-host-key-checking")
    text = out.read_text()
    assert "Secret1" not in text
    assert "ansible_password: !vault |" in text
    inventory = Inventory.load([str(out)], vault_password_files=[str(password_file)], basedir=str(tmp_path))
    server = next(host for host in inventory.hosts if host.name == "server1")
    assert str(server.variables["ansible_password"]) == "Secret1"
    assert "StrictHostKeyChecking=no" in server.variables["ansible_ssh_common_args"]


def test_mhc__paramiko_plugin_for_ssh_hosts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = _convert(tmp_path, capsys, "--ssh-plugin", "paramiko", "--no-host-key-checking")
    inventory = Inventory.load([str(out)], basedir=str(tmp_path))
    hosts = {host.name: host.variables for host in inventory.hosts}
    assert hosts["client1"]["ansible_connection"] == "paramiko"
    assert hosts["client1"]["ansible_host_key_checking"] is False
    assert hosts["box1"]["ansible_connection"] == "containers.podman.podman"


def test_mhc__bad_file_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mhc = tmp_path / "mhc.yaml"
    mhc.write_text(
        textwrap.dedent("""\
        domains:
        - id: test
          hosts:
          - hostname: client1
            role: client
            conn: {type: winrm}
    """)
    )
    assert main(["convert-mhc", str(mhc)]) == 1
    err = capsys.readouterr().err
    assert "mhc.yaml: domains[0].hosts[0] (client1).conn: unknown connection type 'winrm'" in err
    assert "Traceback" not in err


def test_mhc__artifacts_and_os_family_checked_as_pytest_mh_does(tmp_path: Path) -> None:
    def convert(host: str) -> dict[str, object]:
        data = yaml.safe_load(f"domains:\n- id: app\n  hosts:\n  - {{hostname: c1, role: client, {host}}}\n")
        conversion = convert_mhc(data, source="mhc.yaml")
        hostvars: dict[str, object] = conversion.inventory["all"]["children"]["app"]["hosts"]["c1"]
        return hostvars

    assert convert("artifacts: {pytest_setup: [/a], pytest_teardown: [/b], test: [/c]}")["mh_artifacts"] == {
        "pytest_setup": ["/a"], "pytest_teardown": ["/b"], "test": ["/c"],
    }  # fmt: skip
    assert convert("os: {family: Windows}")["mh_os_family"] == "windows"
    with pytest.raises(ValueError, match=r"mhc.yaml: domains\[0\].hosts\[0\] \(c1\).artifacts: unknown phase 'later'"):
        convert("artifacts: {later: [/a]}")
    with pytest.raises(ValueError, match=r"\(c1\).artifacts: a list of paths or a mapping by phase is needed"):
        convert("artifacts: /a")
    with pytest.raises(ValueError, match=r"\(c1\).os.family: 'beos' is not one of linux, windows"):
        convert("os: {family: beos}")


def test_mhc__read_mhc_names_the_file_as_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^conf/mhc.yaml: cannot be read: No such file or directory$"):
        read_mhc(tmp_path / "missing.yaml", source="conf/mhc.yaml")
    (tmp_path / "bad.yaml").write_text("domains: [\n")
    with pytest.raises(ValueError, match=r"^bad.yaml: not YAML: "):
        read_mhc(tmp_path / "bad.yaml", source="bad.yaml")
    (tmp_path / "mhc.yaml").write_text(MHC)
    conversion = read_mhc(tmp_path / "mhc.yaml", source="mhc.yaml")
    server = conversion.inventory["all"]["children"]["test"]["hosts"]["server1"]
    # pytest-mh never checks host keys; in-process like its libssh where ansible-core has the paramiko plugin
    if server["ansible_connection"] == "paramiko":
        assert server["ansible_host_key_checking"] is False
    else:
        assert "StrictHostKeyChecking=no" in server["ansible_ssh_common_args"]
    assert server["ansible_connection"] == ("paramiko" if paramiko_plugin_available() else "ssh")
