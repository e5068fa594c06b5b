"""Unit tests of a lab shaped like a pytest-mh host file: fully qualified names, roles, and the files written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from pytest_mh_ansible._private.cli import main
from pytest_mh_ansible._private.lab.from_mhc import lab_mhc
from pytest_mh_ansible._private.lab.hostfs import etc_hosts
from pytest_mh_ansible._private.lab.inventory import (
    InventoryHost,
    render_inventory,
    render_known_hosts,
    render_ssh_config,
)
from pytest_mh_ansible._private.lab.spec import LabHostSpec, LabSpec
from pytest_mh_ansible.errors import LabError

MHC = """
provisioned_topologies: [ldap]
config: {timeout: 30}
domains:
- id: test
  config: {realm: TEST}
  hosts:
  - hostname: client.test
    role: client
    conn: {type: ssh, host: 192.0.2.1, username: root, password: Secret123}
    artifacts: [/var/log/app.log]
    config: {tool: expect}
  - hostname: master.ldap.test
    role: ldap
    conn: {type: podman, container: ldap}
- id: ipa
  hosts:
  - hostname: master.ipa.test
    role: ipa
"""


@pytest.fixture
def mhc(tmp_path: Path) -> Path:
    path = tmp_path / "mhc.yaml"
    path.write_text(MHC)
    return path


def test_from_mhc__one_host_per_entry_by_its_fqdn_and_role(mhc: Path) -> None:
    spec = LabSpec.from_mhc(mhc, name="suite", packages=["expect"])
    assert spec.name == "suite"
    assert spec.packages == ("expect",)
    assert [(h.name, h.fqdn, h.roles) for h in spec.hosts] == [
        ("client", "client.test", ("client",)),
        ("master", "master.ldap.test", ("ldap",)),
        ("master-ipa", "master.ipa.test", ("ipa",)),  # the short name of a clash takes the next label
    ]
    assert [h.hostname for h in spec.hosts] == ["client.test", "master.ldap.test", "master.ipa.test"]


def test_from_mhc__hosts_keep_the_files_variables_but_not_its_connection(mhc: Path) -> None:
    client, ldap, ipa = LabSpec.from_mhc(mhc).hosts
    assert client.vars["mh_role"] == "client"
    assert client.vars["mh_domain"] == "test"
    assert client.vars["mh_config"] == {"tool": "expect"}
    assert client.vars["mh_artifacts"] == ["/var/log/app.log"]
    assert client.vars["mh_domain_config"] == {"realm": "TEST"}
    assert client.vars["mh_multihost_config"] == {"timeout": 30}
    assert client.vars["mh_multihost_keys"] == {"provisioned_topologies": ["ldap"]}
    assert ipa.vars["mh_domain"] == "ipa"
    for host in (client, ldap, ipa):
        assert not [key for key in host.vars if key.startswith("ansible_")], host.vars


def test_from_mhc__the_spec_round_trips_with_its_host_file(mhc: Path) -> None:
    spec = LabSpec.from_mhc(mhc)
    again = LabSpec.from_dict(spec.to_dict())
    assert again == spec
    assert again.mhc == yaml.safe_load(MHC)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("domains: []", "not a pytest-mh configuration"),
        ("domains: [{id: t, hosts: [{hostname: w.test, role: ad, os: {family: windows}}]}]", "lab hosts are Linux"),
        ("domains: [{id: t, hosts: [{hostname: c.test, role: Client-1}]}]", "role 'Client-1' is invalid"),
        ("domains: [{id: t, hosts: [{hostname: 'a b.test', role: client}]}]", "fqdn 'a b.test' is invalid"),
    ],
)
def test_from_mhc__what_cannot_be_a_lab_is_one_lab_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "mhc.yaml"
    path.write_text(text)
    with pytest.raises(LabError, match=re.escape(message)):
        LabSpec.from_mhc(path)


def test_fqdn__validated_and_distinct() -> None:
    with pytest.raises(LabError, match=re.escape("fqdn 'Client.Test' is invalid")):
        LabHostSpec("client", fqdn="Client.Test")
    with pytest.raises(LabError, match="fqdn"):
        LabHostSpec("client", fqdn="a" * 60 + ".test")  # longer than a hostname can be
    with pytest.raises(LabError, match=re.escape("'client.test' is used twice")):
        LabSpec(hosts=(LabHostSpec("a", fqdn="client.test"), LabHostSpec("b", fqdn="client.test")))
    with pytest.raises(LabError, match="'b' is used twice"):
        LabSpec(hosts=(LabHostSpec("a", fqdn="b"), LabHostSpec("b")))
    assert LabHostSpec("client", fqdn="client").hostname == "client"


def test_etc_hosts__fqdn_first_then_the_short_name() -> None:
    text = etc_hosts({"client": "10.0.0.2", "server": "10.0.0.3"}, {"client": "client.test"})
    assert "10.0.0.2\tclient.test client\n" in text
    assert "10.0.0.3\tserver\n" in text


def test_client_files__inventory_by_fqdn_ssh_and_known_hosts_by_both_names(tmp_path: Path) -> None:
    hosts = [
        InventoryHost(
            "client.test", "10.0.0.2", ("client",), "ssh-ed25519 AAAA", {"mh_role": "client"}, alias="client"
        ),
        InventoryHost("server", "10.0.0.3", ("server",), "ssh-ed25519 BBBB", {}, alias="server"),
    ]
    inventory = yaml.safe_load(
        render_inventory(
            lab="x",
            group="lab_x",
            hosts=hosts,
            key_path=tmp_path / "key",
            known_hosts=tmp_path / "kh",
            user=None,
            root_password=None,
        )
    )
    assert inventory["all"]["hosts"]["client.test"]["ansible_host"] == "10.0.0.2"
    assert inventory["all"]["hosts"]["client.test"]["mh_role"] == "client"
    assert list(inventory["all"]["children"]["client"]["hosts"]) == ["client.test"]
    assert (
        render_known_hosts(hosts) == "client,client.test,10.0.0.2 ssh-ed25519 AAAA\nserver,10.0.0.3 ssh-ed25519 BBBB\n"
    )
    config = render_ssh_config(hosts, key_path=tmp_path / "key", known_hosts=tmp_path / "kh")
    assert "Host client client.test\n" in config
    assert "HostKeyAlias client\n" in config
    assert "Host server\n" in config


def test_lab_mhc__each_conn_points_at_the_lab_host_the_rest_kept(tmp_path: Path) -> None:
    data = yaml.safe_load(MHC)
    result = lab_mhc(data, {"client.test": "10.0.0.2", "master.ldap.test": "10.0.0.3"}, tmp_path / "id")
    client, ldap = result["domains"][0]["hosts"]
    assert client["conn"] == {
        "type": "ssh",
        "host": "10.0.0.2",
        "username": "root",
        "private_key": str(tmp_path / "id"),
    }
    assert ldap["conn"]["host"] == "10.0.0.3"
    assert client["artifacts"] == ["/var/log/app.log"]
    assert result["provisioned_topologies"] == ["ldap"]
    assert "conn" not in result["domains"][1]["hosts"][0]  # not in the lab: left as it was
    assert data["domains"][0]["hosts"][0]["conn"]["host"] == "192.0.2.1"  # the input is not changed


def test_cli__from_mhc_excludes_spec_and_host(mhc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "up", "--from-mhc", str(mhc), "--host", "x:client"]) == 1
    assert "--from-mhc gives the hosts" in capsys.readouterr().err


def test_cli__from_mhc_takes_the_other_lab_options(mhc: Path) -> None:
    from pytest_mh_ansible._private import cli

    args = cli._parser().parse_args(["lab", "up", "--from-mhc", str(mhc), "--name", "suite", "--package", "expect"])
    spec = cli._spec(args)
    assert (spec.name, spec.packages) == ("suite", ("expect",))
    assert [h.fqdn for h in spec.hosts] == ["client.test", "master.ldap.test", "master.ipa.test"]
    assert spec.mhc == yaml.safe_load(MHC)


def test_state__a_hosts_fqdn_is_recorded() -> None:
    from pytest_mh_ansible._private.lab.state import HostState

    host = HostState("client", ("client",), "10.0.0.2", "sysv", "ns", "veth", fqdn="client.test")
    assert HostState.from_json(host.to_json()) == host
    legacy = {k: v for k, v in host.to_json().items() if k != "fqdn"}  # a lab brought up by an older version
    assert HostState.from_json(legacy).fqdn is None
