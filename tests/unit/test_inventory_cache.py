"""The cache of parsed static inventories across runs: what makes a hit, what makes a miss, what is never kept."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_mh_ansible._private.ansible import inventory_cache
from pytest_mh_ansible._private.ansible.inventory import Inventory

HOSTS = """\
all:
  children:
    lab:
      vars:
        mh_domain: lab
      children:
        client:
          hosts:
            client1: {ansible_host: 10.0.0.1, mh_role: client, ports: [1, 2], nested: {a: true}}
        server:
          hosts:
            server1: {ansible_host: 10.0.0.2, ansible_password: Secret123}
  hosts:
    loner: {ansible_connection: local}
"""


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test its own cache directory, no switch from the caller's environment, no ansible.cfg of theirs."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(inventory_cache.ENV_SWITCH, raising=False)
    for name in list(os.environ):
        if name.startswith("ANSIBLE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("ANSIBLE_CONFIG", str(tmp_path / "ansible.cfg"))
    (tmp_path / "ansible.cfg").write_text("[defaults]\nhost_key_checking = False\n")
    return tmp_path / "cache"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def inventory_dir(tmp_path: Path, name: str = "inv") -> Path:
    write(tmp_path / name / "hosts.yml", HOSTS)
    write(tmp_path / name / "group_vars" / "client.yml", "from_group_vars: 1\n")
    return tmp_path / name


def load(path: Path, base: Path | None = None, **kwargs: object) -> Inventory:
    return Inventory.load([str(path)], basedir=str(base or path.parent), **kwargs)  # type: ignore[arg-type]


def snapshot(inventory: Inventory) -> dict[str, object]:
    return {
        "groups": inventory.groups,
        "hosts": [(h.name, h.groups, {k: v for k, v in h.variables.items() if k != "omit"}) for h in inventory.hosts],
        "ungrouped": [h.name for h in inventory.hosts_in_group("ungrouped")],
        "client": [h.name for h in inventory.hosts_in_group("client")],
    }


def test_inventory_cache__second_load_is_a_hit_with_the_same_hosts_groups_and_variables(tmp_path: Path) -> None:
    source = inventory_dir(tmp_path) / "hosts.yml"
    first = load(source)
    assert not first.from_cache
    second = load(source)
    assert second.from_cache
    assert second._parsed is None  # ansible-core parsed nothing
    assert snapshot(second) == snapshot(first)
    assert second.host("client1").variables["from_group_vars"] == 1
    assert second.host("client1").variables["inventory_file"] == str(source)


def test_inventory_cache__ansible_objects_are_made_when_first_asked_for(tmp_path: Path) -> None:
    source = inventory_dir(tmp_path) / "hosts.yml"
    load(source)
    cached = load(source)
    assert cached._parsed is None
    assert sorted(cached.inventory_manager.hosts) == ["client1", "loner", "server1"]
    assert cached.variable_manager is cached.ansible.variable_manager
    assert cached.loader is cached.ansible.loader


def test_inventory_cache__a_hit_imports_no_ansible_inventory_machinery(tmp_path: Path) -> None:
    source = inventory_dir(tmp_path) / "hosts.yml"
    load(source)
    probe = (
        "import sys\n"
        "from pytest_mh_ansible._private.ansible.inventory import Inventory\n"
        f"inv = Inventory.load([{str(source)!r}], basedir={str(source.parent)!r})\n"
        "print(inv.from_cache, inv.host('client1').variables['ansible_host'],"
        " sorted(m for m in sys.modules if m.startswith('ansible')))\n"
    )
    env = {**os.environ}
    done = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, env=env)
    from_cache, host, modules = done.stdout.split(" ", 2)
    assert (from_cache, host) == ("True", "10.0.0.1")
    assert "'ansible.inventory.manager'" not in modules
    assert "'ansible.vars.manager'" not in modules
    assert "'ansible.constants'" not in modules


@pytest.mark.parametrize(
    "change",
    [
        "group_vars file",
        "new host_vars file",
        "inventory file",
        "ansible.cfg",
        "ANSIBLE_ variable",
        "limit",
    ],
)
def test_inventory_cache__each_input_of_the_parse_is_part_of_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    directory = inventory_dir(tmp_path)
    source = directory / "hosts.yml"
    load(source)
    assert load(source).from_cache
    limit = None
    if change == "group_vars file":
        write(directory / "group_vars" / "client.yml", "from_group_vars: 2\n")
    elif change == "new host_vars file":
        write(directory / "host_vars" / "server1.yml", "port: 1\n")
    elif change == "inventory file":
        write(source, HOSTS.replace("10.0.0.2", "10.0.0.3"))
    elif change == "ansible.cfg":
        (tmp_path / "ansible.cfg").write_text("[defaults]\nhost_key_checking = True\n")
    elif change == "ANSIBLE_ variable":
        monkeypatch.setenv("ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED", "true")
    else:
        limit = "client*"
    again = load(source, limit=limit)
    assert not again.from_cache
    if change == "group_vars file":
        assert again.host("client1").variables["from_group_vars"] == 2
    if change == "new host_vars file":
        assert again.host("server1").variables["port"] == 1
    assert load(source, limit=limit).from_cache  # the new state is kept in turn


def test_inventory_cache__limit_and_ungrouped_from_the_cache(tmp_path: Path) -> None:
    source = inventory_dir(tmp_path) / "hosts.yml"
    first = load(source, limit="client1:loner")
    cached = load(source, limit="client1:loner")
    assert cached.from_cache
    assert [h.name for h in cached.hosts] == [h.name for h in first.hosts] == ["client1", "loner"]
    with pytest.raises(KeyError, match="excluded by --limit"):
        cached.host("server1")
    with pytest.raises(KeyError, match="no host 'nobody'"):
        cached.host("nobody")
    assert [h.name for h in cached.hosts_in_group("ungrouped")] == ["loner"]


def test_inventory_cache__a_moved_inventory_is_a_hit_with_its_new_paths(tmp_path: Path) -> None:
    """``--mh-config`` writes its inventory to a new temporary directory in every run."""
    load(inventory_dir(tmp_path, "one") / "hosts.yml", base=tmp_path)
    moved = inventory_dir(tmp_path, "two")
    cached = load(moved / "hosts.yml", base=tmp_path)
    assert cached.from_cache
    variables = cached.host("server1").variables
    assert variables["inventory_file"] == str(moved / "hosts.yml")
    assert variables["inventory_dir"] == str(moved)


def test_inventory_cache__directory_source(tmp_path: Path) -> None:
    directory = inventory_dir(tmp_path)
    write(directory / "more.ini", "[extra]\nextra1\n")
    first = load(directory)
    cached = load(directory)
    assert cached.from_cache
    assert snapshot(cached) == snapshot(first)
    write(directory / "more.ini", "[extra]\nextra2\n")
    assert not load(directory).from_cache


def test_inventory_cache__a_dynamic_script_is_never_cached(tmp_path: Path) -> None:
    script = tmp_path / "inv.py"
    listing = {"web": {"hosts": ["w1"]}, "_meta": {"hostvars": {}}}
    script.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(listing))})\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    assert inventory_cache.cache_key([str(script)], limit=None, base=str(tmp_path)) is None
    load(script)
    again = load(script)
    assert not again.from_cache
    assert [h.name for h in again.hosts] == ["w1"]


def test_inventory_cache__an_inventory_plugin_config_is_never_cached(tmp_path: Path) -> None:
    write(tmp_path / "hosts.yml", HOSTS)
    config = write(tmp_path / "constructed.yml", "plugin: ansible.builtin.constructed\ngroups:\n  odd: true\n")
    key = inventory_cache.cache_key([str(tmp_path / "hosts.yml"), str(config)], limit=None, base=str(tmp_path))
    assert key is None
    assert inventory_cache.cache_key([str(tmp_path / "hosts.yml")], limit=None, base=str(tmp_path)) is not None


def test_inventory_cache__vault_data_is_never_cached(tmp_path: Path) -> None:
    directory = inventory_dir(tmp_path)
    write(directory / "group_vars" / "server.yml", "secret: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162\n")
    assert inventory_cache.cache_key([str(directory / "hosts.yml")], limit=None, base=str(tmp_path)) is None


def test_inventory_cache__a_vault_password_turns_the_cache_off(tmp_path: Path) -> None:
    source = inventory_dir(tmp_path) / "hosts.yml"
    password = write(tmp_path / "vault.txt", "pw\n")
    load(source, vault_password_files=[str(password)])
    assert not load(source, vault_password_files=[str(password)]).from_cache
    assert not list((tmp_path / "cache").glob("pytest-mh-ansible/inventory/*.json"))


def test_inventory_cache__variables_with_jinja_are_rendered_every_run(tmp_path: Path) -> None:
    write(tmp_path / "hosts.ini", '[web]\nweb1 ansible_host="{{ inventory_hostname }}.lab"\n')
    first = load(tmp_path / "hosts.ini")
    again = load(tmp_path / "hosts.ini")
    assert not again.from_cache
    assert again.host("web1").variables["ansible_host"] == first.host("web1").variables["ansible_host"] == "web1.lab"


def test_inventory_cache__plugins_chosen_in_ansible_cfg_or_environment_turn_it_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = inventory_dir(tmp_path) / "hosts.yml"
    (tmp_path / "ansible.cfg").write_text("[inventory]\nenable_plugins = host_list, script, yaml\n")
    assert inventory_cache.cache_key([str(source)], limit=None, base=str(tmp_path)) is None
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    assert inventory_cache.cache_key([str(source)], limit=None, base=str(tmp_path)) is not None
    monkeypatch.setenv("ANSIBLE_VARS_ENABLED", "host_group_vars,my.col.dynamic")
    assert inventory_cache.cache_key([str(source)], limit=None, base=str(tmp_path)) is None


def test_inventory_cache__an_unreadable_or_foreign_entry_is_a_miss(tmp_path: Path) -> None:
    source = inventory_dir(tmp_path) / "hosts.yml"
    load(source)
    (entry,) = (tmp_path / "cache" / "pytest-mh-ansible" / "inventory").glob("*.json")
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert stat.S_IMODE(entry.parent.stat().st_mode) == 0o700
    good = entry.read_text()
    damaged = {**json.loads(good), "all_hosts": None, "vars": {}}  # passes the first checks, fails the reading
    for bad in ("{not json", json.dumps({"format": "1", "key": "another"}), json.dumps([1, 2]), json.dumps(damaged)):
        entry.write_text(bad)
        again = load(source)
        assert not again.from_cache
        assert [h.name for h in again.hosts] == ["client1", "server1", "loner"]
    entry.write_text(good)
    assert load(source).from_cache


def test_inventory_cache__an_unwritable_cache_costs_only_the_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "blocked"
    blocker.write_text("a file where the cache directory would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    source = inventory_dir(tmp_path) / "hosts.yml"
    assert [h.name for h in load(source).hosts] == ["client1", "server1", "loner"]
    assert not load(source).from_cache


def test_inventory_cache__switched_off_by_argument_or_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = inventory_dir(tmp_path) / "hosts.yml"
    load(source)
    assert not load(source, cache=False).from_cache
    monkeypatch.setenv(inventory_cache.ENV_SWITCH, "off")
    assert not load(source).from_cache
    assert load(source, cache=True).from_cache
    assert inventory_cache.enabled("on")
    assert not inventory_cache.enabled("off")


def test_inventory_cache__secrets_of_cached_hosts_are_masked(tmp_path: Path) -> None:
    from pytest_mh_ansible._private.secrets import MASK, secrets

    source = inventory_dir(tmp_path) / "hosts.yml"
    load(source)
    secrets.clear()
    assert load(source).from_cache
    assert secrets.mask("password Secret123") == f"password {MASK}"


class _Config:
    """The two things plugin._inventory_cache reads of a pytest config."""

    def __init__(self, value: str | None) -> None:
        self.value = value

    def getoption(self, name: str, default: object = None) -> str | None:
        assert name == "mh_inventory_cache"
        return self.value


def test_inventory_cache__the_command_line_option_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_mh_ansible.plugin import _inventory_cache

    assert _inventory_cache(_Config(None))  # type: ignore[arg-type]
    assert not _inventory_cache(_Config("off"))  # type: ignore[arg-type]
    monkeypatch.setenv(inventory_cache.ENV_SWITCH, "off")
    assert not _inventory_cache(_Config(None))  # type: ignore[arg-type]
    assert _inventory_cache(_Config("on"))  # type: ignore[arg-type]


def test_inventory_cache__an_input_changed_during_the_parse_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = inventory_dir(tmp_path) / "hosts.yml"
    keys = iter(["a" * 64, "b" * 64])
    monkeypatch.setattr(inventory_cache, "cache_key", lambda *args, **kwargs: next(keys))
    assert not load(source).from_cache
    assert not list((tmp_path / "cache").glob("pytest-mh-ansible/inventory/*.json"))
