"""A lab shaped like a pytest-mh host file: hosts with fully qualified names that resolve each other by them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabSpec

pytestmark = pytest.mark.integration

MHC = """
domains:
- id: test
  hosts:
  - {hostname: client.test, role: client, conn: {type: ssh, host: client.test, username: root, password: Secret123}}
  - {hostname: master.ldap.test, role: ldap, config: {base: "dc=ldap,dc=test"}}
- id: ipa
  hosts:
  - {hostname: master.ipa.test, role: ipa, conn: {type: podman, container: ipa}}
"""
FQDNS = ("client.test", "master.ldap.test", "master.ipa.test")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    name = lab_name("mhfqdn")
    mhc = tmp_path_factory.mktemp("mhc") / "mhc.yaml"
    mhc.write_text(MHC)
    with Lab(LabSpec.from_mhc(mhc, name=name), tmp_path_factory.mktemp("labs") / name) as running:
        yield running


def _ssh(lab: Lab, host: str, command: str) -> str:
    proc = subprocess.run(
        ["ssh", "-F", str(lab.ssh_config_path), host, command],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    return proc.stdout


def test_from_mhc__each_host_calls_itself_by_its_fqdn(lab: Lab) -> None:
    hosts = {h.fqdn: h for h in lab.hosts}
    assert set(hosts) == set(FQDNS)
    assert {h.name for h in lab.hosts} == {"client", "master", "master-ipa"}
    for fqdn in FQDNS:
        # ssh -F reaches a host by either name; the host answers with its fully qualified one
        assert _ssh(lab, fqdn, "hostname; hostname -f").split() == [fqdn, fqdn]
    assert _ssh(lab, "master-ipa", "hostname -s").strip() == "master"


def test_from_mhc__every_host_resolves_every_other_by_fqdn_and_short_name(lab: Lab) -> None:
    addresses = {h.fqdn: h.address for h in lab.hosts}
    names = " ".join([*FQDNS, "client", "master-ipa"])
    for fqdn in FQDNS:
        lines = _ssh(lab, fqdn, f"for n in {names}; do getent hosts $n; done").splitlines()
        resolved = {line.split()[1]: line.split()[0] for line in lines}
        assert {name: resolved[name] for name in FQDNS} == addresses
        assert resolved["client.test"] == addresses["client.test"]
        # a short name resolves too, to the same host
        assert any(line.split()[0] == addresses["master.ipa.test"] and "master-ipa" in line for line in lines)


def test_from_mhc__inventory_names_the_hosts_by_fqdn_in_their_role_groups(lab: Lab) -> None:
    ansible = Path(sys.executable).parent / "ansible"
    proc = subprocess.run(
        [str(ansible), "-i", str(lab.inventory_path), "ldap:ipa", "-m", "command", "-a", "hostname -f", "-o"],
        check=False,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = sorted(line.split(" | ")[0] + " " + line.split()[-1] for line in proc.stdout.splitlines())
    assert lines == ["master.ipa.test master.ipa.test", "master.ldap.test master.ldap.test"]
    inventory = yaml.safe_load(lab.inventory_path.read_text())["all"]["hosts"]
    assert inventory["master.ldap.test"]["mh_config"] == {"base": "dc=ldap,dc=test"}
    assert inventory["master.ipa.test"]["mh_domain"] == "ipa"


def test_from_mhc__written_mhc_logs_in_as_root_by_key_at_each_address(lab: Lab) -> None:
    mhc = yaml.safe_load(lab.mhc_path.read_text())
    entries = [host for domain in mhc["domains"] for host in domain["hosts"]]
    assert [e["hostname"] for e in entries] == list(FQDNS)
    for entry in entries:
        conn = entry["conn"]
        assert (conn["type"], conn["username"]) == ("ssh", "root")
        proc = subprocess.run(
            ["ssh", "-i", conn["private_key"], "-o", f"UserKnownHostsFile={lab.known_hosts_path}",
             "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", f"root@{conn['host']}", "hostname"],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert (proc.returncode, proc.stdout.strip()) == (0, entry["hostname"]), proc.stderr
