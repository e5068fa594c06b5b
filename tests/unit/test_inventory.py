"""Inventory loading with real ansible-core, on inventories written to tmp_path."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from ansible.parsing.vault import VaultLib, VaultSecret

from pytest_mh_ansible._private.ansible.inventory import Inventory, InventoryHost
from pytest_mh_ansible._private.secrets import MASK, secrets
from pytest_mh_ansible.errors import InventoryError


@pytest.fixture(autouse=True)
def _parse_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about ansible-core's parse: the cache across runs has its own (test_inventory_cache.py)."""
    monkeypatch.setenv("MH_ANSIBLE_INVENTORY_CACHE", "off")


INI = """\
[client]
client1
client2 ansible_host="{{ inventory_hostname }}.lab"

[server]
server1 port=389

[lab:children]
client
server

[client:vars]
role=client

[lab:vars]
domain=example.test

[all:vars]
everywhere=yes
"""


def write(path: Path, text: str, *, executable: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def encrypt(plaintext: str, password: str) -> str:
    return VaultLib([("default", VaultSecret(password.encode()))]).encrypt(plaintext).decode()


def inline_vault(name: str, plaintext: str, password: str) -> str:
    body = textwrap.indent(encrypt(plaintext, password), "  ")
    return f"{name}: !vault |\n{body}\n"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def names(hosts: tuple[InventoryHost, ...]) -> list[str]:
    return [host.name for host in hosts]


def assert_plain(value: object) -> None:
    """Only built-in types, at every depth (ansible 2.19 tags str/int subclasses)."""
    assert type(value) in (str, int, float, bool, list, dict, type(None)), (type(value), value)
    if isinstance(value, dict):
        for key, item in value.items():
            assert type(key) is str
            assert_plain(item)
    elif isinstance(value, list):
        for item in value:
            assert_plain(item)


# --- formats -------------------------------------------------------------------------------


def test_inventory__ini_with_children_and_group_vars(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", INI)
    inventory = Inventory.load(["hosts.ini"], basedir=str(tmp_path))

    assert inventory.sources == ("hosts.ini",)
    assert names(inventory.hosts) == ["client1", "client2", "server1"]
    assert inventory.groups == ("client", "server", "lab")
    client1 = inventory.host("client1")
    assert client1.groups == ("client", "lab")
    assert client1.variables["role"] == "client"
    assert client1.variables["domain"] == "example.test"
    assert client1.variables["everywhere"] == "yes"
    assert inventory.host("server1").variables["port"] == 389
    assert "role" not in inventory.host("server1").variables
    assert names(inventory.hosts_in_group("lab")) == ["client1", "client2", "server1"]


def test_inventory__templated_ansible_host_is_rendered(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", INI)
    inventory = Inventory.load([str(tmp_path / "hosts.ini")])

    assert inventory.host("client2").variables["ansible_host"] == "client2.lab"


def test_inventory__magic_variables_are_included(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", INI)
    variables = Inventory.load([str(tmp_path / "hosts.ini")]).host("client1").variables

    assert variables["inventory_hostname"] == "client1"
    assert variables["group_names"] == ["client", "lab"]
    assert variables["groups"]["server"] == ["server1"]
    assert "hostvars" not in variables


def test_inventory__vault_check_walks_each_hosts_own_variables_not_the_whole_inventory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``groups`` lists every host of the inventory in each host's variables: walking it for every host
    made the load quadratic in the number of hosts (200 hosts: 85,000 calls of the check)."""
    from pytest_mh_ansible._private.ansible import inventory

    checked: list[str] = []
    original = inventory.check_inline_vault
    monkeypatch.setattr(
        inventory, "check_inline_vault", lambda value, key, *rest: checked.append(key) or original(value, key, *rest)
    )
    write(tmp_path / "hosts.ini", INI)
    variables = Inventory.load([str(tmp_path / "hosts.ini")]).host("client1").variables
    assert variables["groups"]["server"] == ["server1"]  # still there for the tests
    assert "everywhere" in checked
    assert "role" in checked
    assert "groups" not in checked
    assert "hostvars" not in checked


def test_inventory__variables_are_plain_python_types(tmp_path: Path) -> None:
    write(
        tmp_path / "hosts.yml",
        """\
        all:
          vars:
            nested: {a: [1, "two", {b: true}], c: 1.5}
          hosts:
            h1:
              ansible_host: "{{ inventory_hostname }}.lab"
              count: 3
        """,
    )
    variables = Inventory.load([str(tmp_path / "hosts.yml")]).host("h1").variables

    assert variables["nested"] == {"a": [1, "two", {"b": True}], "c": 1.5}
    for value in variables.values():
        assert_plain(value)


def test_inventory__yaml_with_children(tmp_path: Path) -> None:
    write(
        tmp_path / "hosts.yml",
        """\
        all:
          vars:
            everywhere: 1
          children:
            lab:
              vars:
                domain: example.test
              children:
                server:
                  hosts:
                    server1:
                client:
                  hosts:
                    client1:
                    client2:
                      extra: x
        """,
    )
    inventory = Inventory.load([str(tmp_path / "hosts.yml")])

    assert inventory.groups == ("lab", "server", "client")
    assert names(inventory.hosts) == ["server1", "client1", "client2"]
    assert inventory.host("client2").groups == ("lab", "client")
    assert inventory.host("client2").variables["extra"] == "x"
    assert inventory.host("client1").variables["domain"] == "example.test"
    assert inventory.host("client1").variables["everywhere"] == 1


def test_inventory__directory_with_group_vars_and_host_vars(tmp_path: Path) -> None:
    inventory_dir = tmp_path / "inventory"
    write(inventory_dir / "hosts.ini", INI)
    write(inventory_dir / "group_vars" / "all.yml", "from_all: 1\n")
    write(inventory_dir / "group_vars" / "client" / "main.yml", "from_client_dir: c\n")
    write(inventory_dir / "group_vars" / "lab.yml", "from_lab: l\n")
    write(inventory_dir / "host_vars" / "server1.yml", "from_host: s\n")
    write(inventory_dir / "README.md", "ignored by ansible\n")

    inventory = Inventory.load(["inventory"], basedir=str(tmp_path))

    client1 = inventory.host("client1").variables
    assert (client1["from_all"], client1["from_client_dir"], client1["from_lab"]) == (1, "c", "l")
    assert inventory.host("server1").variables["from_host"] == "s"
    assert "from_host" not in client1


def test_inventory__group_vars_beside_a_file_inventory(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", INI)
    write(tmp_path / "group_vars" / "server.yml", "ldap_base: dc=example\n")

    inventory = Inventory.load([str(tmp_path / "hosts.ini")])

    assert inventory.host("server1").variables["ldap_base"] == "dc=example"


def test_inventory__json(tmp_path: Path) -> None:
    data = {"all": {"children": {"client": {"hosts": {"c1": {"x": 1}, "c2": {}}}}}}
    write(tmp_path / "hosts.json", json.dumps(data))

    inventory = Inventory.load([str(tmp_path / "hosts.json")])

    assert names(inventory.hosts_in_group("client")) == ["c1", "c2"]
    assert inventory.host("c1").variables["x"] == 1


def test_inventory__executable_script(tmp_path: Path) -> None:
    listing = {
        "client": {"hosts": ["client1"], "vars": {"role": "client"}},
        "server": {"hosts": ["server1"]},
        "_meta": {"hostvars": {"client1": {"ansible_host": "10.0.0.1"}, "server1": {"port": 636}}},
    }
    write(
        tmp_path / "inventory.py",
        f"""\
        #!{sys.executable}
        import json, sys
        if sys.argv[1:] == ["--list"]:
            print(json.dumps({listing!r}))
        else:
            print("{{}}")
        """,
        executable=True,
    )

    inventory = Inventory.load([str(tmp_path / "inventory.py")])

    assert inventory.groups == ("client", "server")
    assert inventory.host("client1").variables["ansible_host"] == "10.0.0.1"
    assert inventory.host("client1").variables["role"] == "client"
    assert inventory.host("server1").variables["port"] == 636


def test_inventory__constructed_plugin_after_a_yaml_source(tmp_path: Path) -> None:
    write(
        tmp_path / "hosts.yml",
        """\
        all:
          hosts:
            client1: {os: fedora}
            client2: {os: debian}
            server1: {os: fedora, is_server: true}
        """,
    )
    write(
        tmp_path / "constructed.yml",
        """\
        plugin: ansible.builtin.constructed
        strict: true
        groups:
          servers: is_server | default(false)
        keyed_groups:
          - key: os
            prefix: os
        """,
    )

    inventory = Inventory.load(["hosts.yml", "constructed.yml"], basedir=str(tmp_path))

    assert names(inventory.hosts_in_group("servers")) == ["server1"]
    assert names(inventory.hosts_in_group("os_fedora")) == ["client1", "server1"]
    # groups in creation order: client1 made os_fedora before server1 made servers
    assert inventory.host("server1").groups == ("os_fedora", "servers")


def test_inventory__host_list(tmp_path: Path) -> None:
    inventory = Inventory.load(["h1,h2,"], basedir=str(tmp_path))

    assert inventory.sources == ("h1,h2,",)
    assert names(inventory.hosts) == ["h1", "h2"]
    assert inventory.groups == ()
    assert inventory.host("h1").groups == ()
    assert names(inventory.hosts_in_group("ungrouped")) == ["h1", "h2"]


def test_inventory__several_sources_are_merged(tmp_path: Path) -> None:
    write(tmp_path / "a.ini", "[client]\nclient1\n")
    write(tmp_path / "b.yml", "all:\n  children:\n    server:\n      hosts:\n        server1:\n")

    inventory = Inventory.load(["a.ini", "b.yml"], basedir=str(tmp_path))

    assert names(inventory.hosts) == ["client1", "server1"]


def test_inventory__all_and_ungrouped_are_not_groups(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", "lonely\n[client]\nclient1\n")

    inventory = Inventory.load([str(tmp_path / "hosts.ini")])

    assert inventory.groups == ("client",)
    assert inventory.host("lonely").groups == ()
    assert inventory.host("client1").groups == ("client",)
    assert names(inventory.hosts_in_group("all")) == ["lonely", "client1"]


def test_inventory__hosts_of_a_group_keep_definition_order(tmp_path: Path) -> None:
    write(
        tmp_path / "hosts.ini",
        """\
        [b_servers]
        zeta
        alpha

        [a_clients]
        mike
        bravo

        [lab:children]
        b_servers
        a_clients

        [mixed]
        bravo
        zeta
        """,
    )
    inventory = Inventory.load([str(tmp_path / "hosts.ini")])

    assert names(inventory.hosts_in_group("lab")) == ["zeta", "alpha", "mike", "bravo"]
    assert names(inventory.hosts_in_group("mixed")) == ["zeta", "bravo"]
    assert inventory.host("zeta").groups == ("b_servers", "lab", "mixed")


def test_inventory__relative_sources_resolve_against_basedir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "inventory" / "hosts.ini", INI)
    monkeypatch.chdir("/")

    inventory = Inventory.load(["inventory/hosts.ini"], basedir=str(tmp_path))

    assert len(inventory.hosts) == 3


def test_inventory__an_empty_inventory_is_not_an_error(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", "[client]\n")

    inventory = Inventory.load([str(tmp_path / "hosts.ini")])

    assert inventory.hosts == ()
    assert inventory.groups == ("client",)
    assert inventory.hosts_in_group("client") == ()


def test_inventory__host_and_group_lookups_fail_with_clear_key_errors(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", INI)
    inventory = Inventory.load([str(tmp_path / "hosts.ini")], limit="client*")

    with pytest.raises(KeyError, match=r"no host 'nope'.*client1, client2"):
        inventory.host("nope")
    with pytest.raises(KeyError, match=r"'server1' is excluded by --limit"):
        inventory.host("server1")
    with pytest.raises(KeyError, match=r"no group 'nope'.*client, server, lab"):
        inventory.hosts_in_group("nope")


def test_inventory__many_hosts_load_quickly_and_variables_are_lazy(tmp_path: Path) -> None:
    lines = [f"h{i} ansible_host=10.0.{i // 250}.{i % 250}" for i in range(200)]
    write(tmp_path / "hosts.ini", "[lab]\n" + "\n".join(lines) + "\n")

    inventory = Inventory.load([str(tmp_path / "hosts.ini")])

    assert len(inventory.hosts) == 200
    assert inventory.hosts[199].variables["ansible_host"] == "10.0.0.199"
    assert "variables of host" in repr(inventory.hosts[0].variables)


def test_inventory__one_variable_is_rendered_without_the_others(tmp_path: Path) -> None:
    """The session reads mh_role/mh_domain/mh_pool of every host: that must not render all of their variables."""
    write(
        tmp_path / "hosts.yml",
        """
        all:
          hosts:
            h1:
              mh_domain: "{{ 'ld' + 'ap' }}"
              broken: "{{ no_such_variable + 1 }}"
        """,
    )
    inventory = Inventory.load([str(tmp_path / "hosts.yml")])
    variables = inventory.host("h1").variables

    assert variables.get("mh_domain") == "ldap"
    assert variables.get("mh_pool") is None
    assert "mh_role" not in variables
    assert not [w for w in inventory.warnings if "cannot be templated" in w]  # 'broken' was not rendered
    assert variables["broken"] == "{{ no_such_variable + 1 }}"  # rendered when read: raw text kept, a warning
    assert [w for w in inventory.warnings if "'broken' cannot be templated" in w]
    assert dict(variables)["mh_domain"] == "ldap"


# --- --limit -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        ("server*", ["server1"]),
        ("client1:server1", ["client1", "server1"]),
        ("!client1", ["client2", "server1"]),
        ("lab:&client", ["client1", "client2"]),
    ],
)
def test_inventory__limit_selects_hosts(tmp_path: Path, limit: str, expected: list[str]) -> None:
    write(tmp_path / "hosts.ini", INI)

    inventory = Inventory.load([str(tmp_path / "hosts.ini")], limit=limit)

    assert names(inventory.hosts) == expected
    assert names(inventory.hosts_in_group("lab")) == expected
    assert inventory.groups == ("client", "server", "lab")


def test_inventory__limit_matching_nothing_is_a_warning(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", INI)

    inventory = Inventory.load([str(tmp_path / "hosts.ini")], limit="nothing*")

    assert inventory.hosts == ()
    assert any("'nothing*' matches no host" in warning for warning in inventory.warnings)


# --- errors --------------------------------------------------------------------------------


def test_inventory__missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InventoryError) as info:
        Inventory.load(["inventory/hosts.ini"], basedir=str(tmp_path))

    assert str(info.value) == "inventory/hosts.ini: no such file or directory"
    assert info.value.source == "inventory/hosts.ini"


def test_inventory__broken_yaml_names_the_file_and_the_parse_error(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "hosts.yml", "all:\n  hosts:\n    a: [\n")

    with pytest.raises(InventoryError) as info:
        Inventory.load(["hosts.yml"], basedir=str(tmp_path))

    message = str(info.value)
    assert message.startswith("hosts.yml: cannot be parsed as an inventory")
    assert "YAML parsing failed" in message
    assert "line 4" in message
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("vars_file", ["group_vars/all.yml", "group_vars/client/main.yml", "host_vars/client1"])
def test_inventory__unparsable_vars_file_is_reported_against_the_file(tmp_path: Path, vars_file: str) -> None:
    write(tmp_path / "inventory" / "hosts.ini", "[client]\nclient1\n")
    write(tmp_path / "inventory" / vars_file, "ok: 1\nbad: {\n")

    with pytest.raises(InventoryError) as info:
        Inventory.load(["inventory/hosts.ini"], basedir=str(tmp_path))

    assert info.value.source == f"inventory/{vars_file}"
    assert str(info.value).startswith(f"inventory/{vars_file}: cannot be parsed: YAML parsing failed")
    assert "client1: variables cannot be read" not in str(info.value)


def test_inventory__broken_ini_names_the_file_and_the_line(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "hosts.ini", "[client]\nclient1 not-a-key-value\n")

    with pytest.raises(InventoryError) as info:
        Inventory.load([str(tmp_path / "hosts.ini")])

    assert info.value.source == str(tmp_path / "hosts.ini")
    assert "(ini plugin)" in str(info.value)
    assert "Expected key=value host variable assignment, got: not-a-key-value" in str(info.value)
    assert capfd.readouterr() == ("", "")


def test_inventory__broken_file_inside_a_directory_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "inventory" / "good.ini", INI)
    write(tmp_path / "inventory" / "bad.yml", "all: [\n")

    with pytest.raises(InventoryError, match=r"^inventory/bad.yml: cannot be parsed"):
        Inventory.load(["inventory"], basedir=str(tmp_path))


def test_inventory__failing_script_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "inventory.sh", "#!/bin/sh\necho 'boom' >&2\nexit 3\n", executable=True)

    with pytest.raises(InventoryError) as info:
        Inventory.load(["inventory.sh"], basedir=str(tmp_path))

    assert str(info.value).startswith("inventory.sh: cannot be parsed as an inventory (script plugin): ")
    assert "exit code 3" in str(info.value)
    assert "boom" in str(info.value)


def test_inventory__constructed_with_a_failing_strict_expression_is_an_error(tmp_path: Path) -> None:
    write(
        tmp_path / "constructed.yml", "plugin: ansible.builtin.constructed\nstrict: true\ngroups:\n  x: undefined_v\n"
    )
    write(tmp_path / "hosts.yml", "all:\n  hosts:\n    h1:\n")

    with pytest.raises(InventoryError) as info:
        Inventory.load(["hosts.yml", "constructed.yml"], basedir=str(tmp_path))

    assert str(info.value).startswith("constructed.yml: cannot be parsed as an inventory (auto plugin): ")
    assert "'undefined_v' is undefined" in str(info.value)


def test_inventory__constructed_alone_gives_an_empty_inventory(tmp_path: Path) -> None:
    # constructed only groups hosts that sources before it added; alone, it adds none
    write(tmp_path / "constructed.yml", "plugin: ansible.builtin.constructed\n")

    assert Inventory.load(["constructed.yml"], basedir=str(tmp_path)).hosts == ()


def test_inventory__empty_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "inventory").mkdir()

    with pytest.raises(InventoryError, match=r"^inventory: directory holds no inventory file"):
        Inventory.load(["inventory"], basedir=str(tmp_path))


def test_inventory__a_failure_leaves_ansible_usable_for_the_next_load(tmp_path: Path) -> None:
    write(tmp_path / "bad.ini", "[g]\nh x\n")
    write(tmp_path / "good.ini", INI)
    with pytest.raises(InventoryError):
        Inventory.load([str(tmp_path / "bad.ini")])

    assert len(Inventory.load([str(tmp_path / "good.ini")]).hosts) == 3


# --- vault ---------------------------------------------------------------------------------


@pytest.fixture
def vaulted(tmp_path: Path) -> tuple[Path, str, str, str]:
    """A directory inventory with an inline !vault value and a whole vaulted group_vars file."""
    password, inline_secret, file_secret = unique("pw"), unique("inline"), unique("file")
    inventory_dir = tmp_path / "inventory"
    write(inventory_dir / "hosts.ini", INI)
    write(inventory_dir / "group_vars" / "all" / "main.yml", inline_vault("db_password", inline_secret, password))
    write(inventory_dir / "group_vars" / "all" / "vault.yml", encrypt(f"vault_api_key: {file_secret}\n", password))
    write(tmp_path / "vault-pass.txt", password + "\n")
    return inventory_dir, password, inline_secret, file_secret


def test_inventory__vault_with_password_file_decrypts_inline_and_whole_file_values(
    tmp_path: Path, vaulted: tuple[Path, str, str, str]
) -> None:
    _, _, inline_secret, file_secret = vaulted

    inventory = Inventory.load(["inventory"], vault_password_files=["vault-pass.txt"], basedir=str(tmp_path))

    variables = inventory.host("server1").variables
    assert variables["db_password"] == inline_secret
    assert variables["vault_api_key"] == file_secret
    assert type(variables["db_password"]) is str
    assert type(variables["vault_api_key"]) is str


def test_inventory__vault_with_password_script(tmp_path: Path, vaulted: tuple[Path, str, str, str]) -> None:
    _, password, inline_secret, _ = vaulted
    write(tmp_path / "vault-pass.sh", f"#!/bin/sh\necho '{password}'\n", executable=True)

    inventory = Inventory.load(["inventory"], vault_password_files=["vault-pass.sh"], basedir=str(tmp_path))

    assert inventory.host("client1").variables["db_password"] == inline_secret


def test_inventory__vault_id_with_label(tmp_path: Path, vaulted: tuple[Path, str, str, str]) -> None:
    _, _, inline_secret, _ = vaulted

    inventory = Inventory.load(["inventory"], vault_ids=["lab@vault-pass.txt"], basedir=str(tmp_path))

    assert inventory.host("client1").variables["db_password"] == inline_secret


def test_inventory__vault_password_file_from_ansible_environment(
    tmp_path: Path, vaulted: tuple[Path, str, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, _, file_secret = vaulted
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", str(tmp_path / "vault-pass.txt"))

    inventory = Inventory.load(["inventory"], basedir=str(tmp_path))

    assert inventory.host("client1").variables["vault_api_key"] == file_secret


def test_inventory__vault_without_password_names_the_file(
    tmp_path: Path, vaulted: tuple[Path, str, str, str], capfd: pytest.CaptureFixture[str]
) -> None:
    _, _, inline_secret, file_secret = vaulted

    with pytest.raises(InventoryError) as info:
        Inventory.load(["inventory"], basedir=str(tmp_path))

    assert str(info.value) == (
        "inventory/group_vars/all/vault.yml: vault-encrypted content but no vault password given"
        " (--mh-vault-password-file or --mh-vault-id)"
    )
    assert inline_secret not in str(info.value)
    assert file_secret not in str(info.value)
    assert capfd.readouterr() == ("", "")


def test_inventory__vault_with_wrong_password_names_the_file(
    tmp_path: Path, vaulted: tuple[Path, str, str, str]
) -> None:
    _, _, inline_secret, file_secret = vaulted
    write(tmp_path / "wrong.txt", "wrong-password\n")

    with pytest.raises(InventoryError) as info:
        Inventory.load(["inventory"], vault_password_files=["wrong.txt"], basedir=str(tmp_path))

    assert info.value.source == "inventory/group_vars/all/vault.yml"
    assert "cannot be decrypted with the vault password(s) given" in str(info.value)
    assert inline_secret not in str(info.value)
    assert file_secret not in str(info.value)


def test_inventory__inline_vault_without_password_names_the_file_and_variable(tmp_path: Path) -> None:
    secret = unique("inline")
    write(tmp_path / "hosts.ini", INI)
    write(tmp_path / "group_vars" / "client.yml", "plain: 1\n" + inline_vault("db_password", secret, "pw-x"))

    with pytest.raises(InventoryError) as info:
        Inventory.load(["hosts.ini"], basedir=str(tmp_path))

    assert info.value.source == "group_vars/client.yml"
    assert "variable 'db_password' (line 2): vault-encrypted value but no vault password given" in str(info.value)
    assert secret not in str(info.value)


def test_inventory__inline_vault_with_wrong_password_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", INI)
    write(tmp_path / "group_vars" / "client.yml", inline_vault("db_password", unique("inline"), "pw-x"))
    write(tmp_path / "wrong.txt", "wrong-password\n")

    with pytest.raises(InventoryError, match=r"^group_vars/client.yml: variable 'db_password' \(line 1\): .*decrypted"):
        Inventory.load(["hosts.ini"], vault_password_files=["wrong.txt"], basedir=str(tmp_path))


def test_inventory__missing_vault_password_file_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", INI)

    with pytest.raises(InventoryError, match=r"^nope.txt: vault password file: no such file$"):
        Inventory.load(["hosts.ini"], vault_password_files=["nope.txt"], basedir=str(tmp_path))


def test_inventory__loads_with_different_vault_passwords_in_one_process(tmp_path: Path) -> None:
    loaded = []
    for index in range(2):
        password, secret = unique("pw"), unique("value")
        directory = tmp_path / f"inv{index}"
        write(directory / "hosts.ini", "[client]\nclient1\n")
        write(directory / "group_vars" / "client.yml", inline_vault("token", secret, password))
        write(directory / "pass.txt", password)
        inventory = Inventory.load([str(directory)], vault_password_files=[str(directory / "pass.txt")])
        loaded.append((inventory, secret))

    # Variables are computed lazily, each with its own inventory's secrets.
    for inventory, secret in loaded:
        assert inventory.host("client1").variables["token"] == secret


def test_inventory__vault_and_secret_named_values_are_registered_and_masked(
    tmp_path: Path, vaulted: tuple[Path, str, str, str]
) -> None:
    _, password, inline_secret, file_secret = vaulted
    plain_secret = unique("plain")
    write(tmp_path / "inventory" / "host_vars" / "client1.yml", f"ansible_password: {plain_secret}\n")

    inventory = Inventory.load(["inventory"], vault_password_files=["vault-pass.txt"], basedir=str(tmp_path))
    inventory.host("client1").variables["ansible_password"]

    for value in (password, inline_secret, file_secret, plain_secret):
        assert secrets.mask(f"x {value} y") == f"x {MASK} y"


def test_inventory__host_repr_does_not_show_variables(tmp_path: Path, vaulted: tuple[Path, str, str, str]) -> None:
    _, _, inline_secret, _ = vaulted

    inventory = Inventory.load(["inventory"], vault_password_files=["vault-pass.txt"], basedir=str(tmp_path))

    assert inline_secret not in repr(inventory.hosts)
    assert repr(inventory.host("client1")) == "InventoryHost(name='client1', groups=('client', 'lab'))"


def test_inventory__exposes_ansible_objects_for_playbook_runs(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", INI)

    inventory = Inventory.load([str(tmp_path / "hosts.ini")], limit="client*")

    assert [h.name for h in inventory.inventory_manager.get_hosts("all")] == ["client1", "client2"]
    assert inventory.variable_manager is not None
    assert inventory.loader is not None
    assert os.path.isabs(inventory.inventory_manager.get_host("client1").vars["inventory_file"])


# --- Ansible's process-wide state ---------------------------------------------------------


def test_inventory__ansible_warnings_are_collected_not_printed(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "hosts.ini", "[client]\nclient\n")

    inventory = Inventory.load([str(tmp_path / "hosts.ini")])

    assert any("Found both group and host with same name: client" in warning for warning in inventory.warnings)
    assert capfd.readouterr() == ("", "")


def test_inventory__display_is_restored_after_load(tmp_path: Path) -> None:
    from ansible.utils.display import Display

    write(tmp_path / "bad.ini", "[g]\nh x\n")
    with pytest.raises(InventoryError):
        Inventory.load([str(tmp_path / "bad.ini")])

    assert not {"warning", "error_as_warning", "deprecated", "error"} & set(vars(Display()))


def test_inventory__vault_context_is_left_for_playbook_runs(
    tmp_path: Path, vaulted: tuple[Path, str, str, str]
) -> None:
    from ansible.parsing.vault import VaultSecretsContext

    Inventory.load(["inventory"], vault_password_files=["vault-pass.txt"], basedir=str(tmp_path))

    context = VaultSecretsContext.current(optional=True)
    assert context is not None
    assert [label for label, _ in context.secrets] == ["default"]


def test_inventory__undefined_template_keeps_the_raw_text_and_warns(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", 'h1 broken="{{ no_such_variable }}" fine=1\n')

    inventory = Inventory.load([str(tmp_path / "hosts.ini")])

    assert inventory.host("h1").variables["broken"] == "{{ no_such_variable }}"
    assert inventory.host("h1").variables["fine"] == 1
    assert any("h1: variable 'broken' cannot be templated" in warning for warning in inventory.warnings)


def test_inventory__vaulted_group_vars_of_unknown_groups_are_ignored(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", INI)
    write(tmp_path / "group_vars" / "other.yml", encrypt("x: 1\n", "pw-y"))

    assert len(Inventory.load(["hosts.ini"], basedir=str(tmp_path)).hosts) == 3


def test_inventory__a_later_load_sees_vars_files_added_since(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", INI)
    assert "added" not in Inventory.load(["hosts.ini"], basedir=str(tmp_path)).host("client1").variables

    write(tmp_path / "group_vars" / "client.yml", "added: yes\n")

    assert Inventory.load(["hosts.ini"], basedir=str(tmp_path)).host("client1").variables["added"] is True


def test_inventory__ansible_cfg_any_unparsed_is_failed_gives_the_same_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ansible import constants

    monkeypatch.setattr(constants, "INVENTORY_ANY_UNPARSED_IS_FAILED", True)
    write(tmp_path / "hosts.ini", "[client]\nclient1 not-a-key-value\n")

    with pytest.raises(InventoryError, match=r"^hosts.ini: cannot be parsed as an inventory \(ini plugin\): "):
        Inventory.load(["hosts.ini"], basedir=str(tmp_path))


def test_inventory__limit_from_a_missing_file_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", INI)

    with pytest.raises(InventoryError, match=r"^hosts.ini: --limit '@nope.retry': "):
        Inventory.load(["hosts.ini"], limit="@nope.retry", basedir=str(tmp_path))


def test_inventory__one_variable_read_still_registers_the_hosts_secrets(tmp_path: Path) -> None:
    """Reading mh_domain of a host makes its passwords known to the masking, as rendering all would."""
    from pytest_mh_ansible._private.secrets import secrets

    password, token = unique("pw-"), unique("tok-")
    write(
        tmp_path / "hosts.yml",
        f"""
        all:
          hosts:
            h1:
              mh_domain: ldap
              ansible_password: {password}
              app: {{db: {{user: app, api_token: {token}}}}}
        """,
    )
    inventory = Inventory.load([str(tmp_path / "hosts.yml")])
    assert inventory.host("h1").variables.get("mh_domain") == "ldap"
    assert password not in secrets.mask(f"login with {password}")
    assert token not in secrets.mask(f"token {token}")
