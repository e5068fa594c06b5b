"""Fixtures of the module-call integration tests: a one-host lab, its inventory and each host's ``HostModules``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from labname import lab_name

from pytest_mh_ansible._private.ansible.executor import StandardExecutor
from pytest_mh_ansible._private.ansible.inventory import Inventory
from pytest_mh_ansible._private.ansible.warm import WarmExecutor
from pytest_mh_ansible.host import MultihostHost
from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec, LabUserSpec
from pytest_mh_ansible.modules import HostModules

# One lab per xdist worker: lab names must differ for labs to coexist.
LAB_NAME = lab_name("mhmod")
VAULT_PASSWORD = "mhmod-vault-pw-93"
VAULT_PLAIN = "vaulted-word-51"


@pytest.fixture(scope="session")
def mod_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """One sysv host, server1, with a non-root sudo user whose sudo asks for the password."""
    spec = LabSpec(name=LAB_NAME, hosts=(LabHostSpec("server1", roles=("server",)),), user=LabUserSpec("labuser"))
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab


@pytest.fixture(scope="session")
def lab_password(mod_lab: Lab) -> str:
    """The lab user's password (the secret that must never show up)."""
    data = yaml.safe_load(mod_lab.inventory_path.read_text())
    return str(data["all"]["hosts"]["server1"]["mh_lab_user_password"])


def _vaulted(text: str) -> str:
    from ansible.parsing.vault import VaultLib, VaultSecret

    return VaultLib([("default", VaultSecret(VAULT_PASSWORD.encode()))]).encrypt(text).decode()


@pytest.fixture(scope="session")
def inventory(mod_lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    """The lab's inventory plus a second source: the lab user's login, an unreachable host, a vaulted variable."""
    base = tmp_path_factory.mktemp("mhmod-inventory")
    lab_hosts = yaml.safe_load(mod_lab.inventory_path.read_text())["all"]["hosts"]
    root: dict[str, Any] = lab_hosts["server1"]
    user_vars = {
        key: root[key]
        for key in ("ansible_host", "ansible_ssh_common_args", "ansible_python_interpreter", "ansible_ssh_pipelining")
    }
    user_vars.update(
        ansible_user=root["mh_lab_user"],
        ansible_password=root["mh_lab_user_password"],
        ansible_become_password=root["mh_lab_user_password"],
    )
    hosts = {
        "server1": {"mh_word": "plain-word"},
        "server1-user": user_vars,
        "ghost": {"ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_user": "root"},
    }
    extra_path = base / "extra.yml"
    extra_path.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    vaulted = "".join(f"        {line}\n" for line in _vaulted(VAULT_PLAIN).splitlines())
    vault_path = base / "vaulted.yml"
    vault_path.write_text(f"all:\n  hosts:\n    server1:\n      mh_vault_word: !vault |\n{vaulted}")
    password_file = base / "vault-pw"
    password_file.write_text(VAULT_PASSWORD + "\n")
    return Inventory.load(
        [str(mod_lab.inventory_path), str(extra_path), str(vault_path)],
        vault_password_files=[str(password_file)],
    )


@pytest.fixture(scope="session", params=["standard", "warm"])
def executor(inventory: Inventory, request: pytest.FixtureRequest) -> Iterator[StandardExecutor]:
    """The session-long executor, closed (ssh masters and agents stopped) at the end; every test runs with both."""
    executor = StandardExecutor(inventory) if request.param == "standard" else WarmExecutor(inventory)
    yield executor
    executor.close()


def _modules(inventory: Inventory, executor: StandardExecutor, name: str) -> HostModules:
    host = MultihostHost(name, roles=(), domain="default", variables=inventory.host(name).variables)
    return HostModules(host, executor)


@pytest.fixture(scope="session")
def server(inventory: Inventory, executor: StandardExecutor) -> HostModules:
    """server1, connected as root."""
    return _modules(inventory, executor, "server1")


@pytest.fixture(scope="session")
def server_user(inventory: Inventory, executor: StandardExecutor) -> HostModules:
    """server1, connected as the non-root lab user (password login, sudo with that password)."""
    return _modules(inventory, executor, "server1-user")


@pytest.fixture(scope="session")
def ghost(inventory: Inventory, executor: StandardExecutor) -> HostModules:
    """A host nobody answers for (127.0.0.1 port 1)."""
    return _modules(inventory, executor, "ghost")


@pytest.fixture
def workdir(server: HostModules, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh directory on server1, removed after the test."""
    path = f"/tmp/mhmod-{request.node.name[:40].replace('[', '-').replace(']', '')}"
    server.run("ansible.builtin.file", path=path, state="absent")
    server.run("ansible.builtin.file", path=path, state="directory")
    yield path
    server.run("ansible.builtin.file", path=path, state="absent")


@pytest.fixture(scope="session")
def vault_plain() -> str:
    """The decrypted value of ``mh_vault_word``."""
    return VAULT_PLAIN
