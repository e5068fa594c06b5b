"""Unit tests of the lab's spec parsing, kernel object naming and subnet choice (no root needed)."""

from __future__ import annotations

from ipaddress import IPv4Network
from pathlib import Path

import pytest

from pytest_mh_ansible._private.lab import system
from pytest_mh_ansible._private.lab.hostfs import sshd_config
from pytest_mh_ansible._private.lab.naming import IFNAMSIZ, LabNames, lab_tag
from pytest_mh_ansible._private.lab.spec import LabHostSpec, LabSpec, LabUserSpec, parse_host_option
from pytest_mh_ansible._private.lab.subnet import bridge_address, choose_subnet, host_address
from pytest_mh_ansible.errors import LabError

SPEC_YAML = """
name: webapp
init: sysv
subnet: auto
packages: [nginx, curl]
user: {name: labuser, sudo: true}
password: true
hosts:
  - {name: client1, roles: [client]}
  - {name: server1, roles: [server, web], init: systemd, vars: {mh_domain: app}}
"""


def test_spec__from_file_reads_every_field(tmp_path: Path) -> None:
    path = tmp_path / "lab.yml"
    path.write_text(SPEC_YAML)
    spec = LabSpec.from_file(path)
    assert spec.name == "webapp"
    assert spec.subnet is None
    assert spec.packages == ("nginx", "curl")
    assert spec.user == LabUserSpec("labuser", sudo=True)
    assert spec.password is True
    assert spec.source == path
    client, server = spec.hosts
    assert client == LabHostSpec("client1", roles=("client",))
    assert server.roles == ("server", "web")
    assert server.vars == {"mh_domain": "app"}
    assert spec.init_of(client) == "sysv"
    assert spec.init_of(server) == "systemd"


def test_spec__round_trips_through_its_dict_form(tmp_path: Path) -> None:
    path = tmp_path / "lab.yml"
    path.write_text(SPEC_YAML)
    spec = LabSpec.from_file(path)
    assert LabSpec.from_dict(spec.to_dict()) == spec


def test_spec__defaults() -> None:
    spec = LabSpec(hosts=(LabHostSpec("h1"),))
    assert spec.name == "lab"
    assert spec.init == "sysv"
    assert spec.user is None
    assert spec.password is False
    assert spec.packages == ()


def test_spec__explicit_subnet_is_normalised() -> None:
    assert LabSpec(hosts=(LabHostSpec("h1"),), subnet="10.213.7.0/24").subnet == "10.213.7.0/24"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"hosts": []}, "has no hosts"),
        ({"name": "Bad Name", "hosts": ["h1"]}, "lab name 'Bad Name' is invalid"),
        ({"hosts": ["h1", "h1"]}, "host name 'h1' is used twice"),
        ({"hosts": ["Bad_Host"]}, "lab host name 'Bad_Host' is invalid"),
        ({"hosts": ["localhost"]}, "lab host name 'localhost' is invalid"),
        ({"hosts": ["h1:Bad-Role"]}, "role 'Bad-Role' is invalid"),
        ({"hosts": [{"name": "h1", "init": "upstart"}]}, "init 'upstart' is invalid"),
        ({"init": "openrc", "hosts": ["h1"]}, "init 'openrc' is invalid"),
        ({"hosts": ["h1"], "subnet": "10.213.0.0/16"}, "must be a private /24"),
        ({"hosts": ["h1"], "subnet": "8.8.8.0/24"}, "must be a private /24"),
        ({"hosts": ["h1"], "subnet": "nonsense"}, "is not an IPv4 network"),
        ({"hosts": ["h1"], "packages": ["ok", "rm -rf"]}, "package name 'rm -rf' is invalid"),
        ({"hosts": ["h1"], "user": {"name": "root"}}, "lab user name 'root' is invalid"),
        ({"hosts": ["h1"], "user": {"nme": "x"}}, "unknown keys ['nme']"),
        ({"hosts": [{"name": "h1", "role": ["x"]}]}, "unknown keys ['role']"),
        ({"hosts": [{"roles": ["x"]}]}, "has no 'name'"),
        ({"hosts": ["h1"], "extra": 1}, "unknown keys ['extra']"),
        ({"hosts": "h1"}, "'hosts' must be a list"),
    ],
)
def test_spec__invalid_input_raises_lab_error_naming_the_value(data: dict[str, object], message: str) -> None:
    with pytest.raises(LabError) as info:
        LabSpec.from_dict(data)
    assert message in str(info.value)


def test_spec__file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(LabError, match="cannot read the lab spec"):
        LabSpec.from_file(tmp_path / "missing.yml")
    bad = tmp_path / "bad.yml"
    bad.write_text("hosts: [h1\n")
    with pytest.raises(LabError, match="not valid YAML"):
        LabSpec.from_file(bad)
    invalid = tmp_path / "invalid.yml"
    invalid.write_text("hosts: [Bad_Host]\n")
    with pytest.raises(LabError, match=r"invalid\.yml: lab host name 'Bad_Host'"):
        LabSpec.from_file(invalid)


def test_host_option__parses_name_and_roles() -> None:
    assert parse_host_option("server1:server,web") == LabHostSpec("server1", roles=("server", "web"))
    assert parse_host_option("client1") == LabHostSpec("client1")


@pytest.mark.parametrize(
    "name", ["a", "lab", "mhlabt", "abcdefgh", "abcdefghi", "web-app", "x_y", "a" * 32, "webapp-production-eu"]
)
def test_names__interface_names_fit_ifnamsiz(name: str) -> None:
    names = LabNames(name)
    for ifname in (names.bridge, names.veth(0), names.veth(199)):
        assert len(ifname) <= IFNAMSIZ, ifname
        assert "/" not in ifname
        assert " " not in ifname


def test_names__differ_for_different_lab_names() -> None:
    names = ["lab", "lab1", "lab-1", "lab_1", "abcdefgh", "abcdefghi", "abcdefghj", "webapp-a", "webapp-b", "a" * 32]
    tags = {lab_tag(n) for n in names}
    assert len(tags) == len(names)
    bridges = {LabNames(n).bridge for n in names}
    assert len(bridges) == len(names)
    # a long name's hashed tag can never equal a short name used as it is
    assert "." in lab_tag("abcdefghi")
    assert "." not in lab_tag("abcdefgh")


def test_names__netns_and_group_derive_from_lab_and_host() -> None:
    names = LabNames("web-app")
    assert names.netns("client1") == "pytest-mh-ansible.web-app.client1"
    assert names.group == "lab_web_app"
    assert names.veth(0) != names.veth(1)


def test_subnet__auto_skips_taken_networks() -> None:
    taken = [
        IPv4Network("192.0.2.0/24"),
        IPv4Network("10.213.0.0/24"),
        IPv4Network("10.213.1.0/25"),
        IPv4Network("10.213.2.7/32"),
    ]
    assert choose_subnet(None, taken) == IPv4Network("10.213.3.0/24")


def test_subnet__auto_takes_first_when_nothing_overlaps() -> None:
    assert choose_subnet(None, [IPv4Network("192.0.2.0/24")]) == IPv4Network("10.213.0.0/24")


def test_subnet__a_route_covering_the_pool_leaves_nothing() -> None:
    with pytest.raises(LabError, match=r"every /24 of 10\.213\.0\.0/16 is taken"):
        choose_subnet(None, [IPv4Network("10.0.0.0/8")])


def test_subnet__requested_one_is_refused_when_taken() -> None:
    with pytest.raises(LabError, match=r"subnet '10.213.7.0/24' is taken on this machine \(overlaps 10.213.7.0/25\)"):
        choose_subnet("10.213.7.0/24", [IPv4Network("10.213.7.0/25")], lab="x")
    assert choose_subnet("10.213.8.0/24", [IPv4Network("10.213.7.0/24")]) == IPv4Network("10.213.8.0/24")


def test_subnet__addresses_of_bridge_and_hosts() -> None:
    net = IPv4Network("10.213.5.0/24")
    assert str(bridge_address(net)) == "10.213.5.1"
    assert str(host_address(net, 0)) == "10.213.5.11"
    assert str(host_address(net, 2)) == "10.213.5.13"


def test_machine_check__refuses_non_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(LabError, match="the lab needs root"):
        system.check_machine()


def test_machine_check__names_the_package_of_a_missing_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr("shutil.which", lambda tool: None if tool == "/usr/sbin/sshd" else tool)
    with pytest.raises(LabError, match=r"package 'openssh-server' \(apt-get install openssh-server\)"):
        system.check_machine()


def test_systemd_check__names_the_systemd_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(system, "SYSTEMD", str(tmp_path / "no-systemd"))
    with pytest.raises(LabError, match=r"install the Debian package 'systemd'"):
        system.check_systemd()


@pytest.mark.parametrize("root_password", [False, True])
def test_sshd_config__takes_passwords_of_every_user_root_only_with_password(root_password: bool) -> None:
    # SSHClient's lab tests log in as users they make with useradd + chpasswd: password logins must work
    # for any user, through PAM, without keyboard-interactive (paramiko answers plain password requests).
    lines = set(sshd_config(root_password=root_password).splitlines())
    assert {"PasswordAuthentication yes", "KbdInteractiveAuthentication no", "UsePAM yes"} <= lines
    assert not {line for line in lines if line.startswith(("AllowUsers", "DenyUsers", "AllowGroups", "Match"))}
    assert ("PermitRootLogin yes" if root_password else "PermitRootLogin prohibit-password") in lines
