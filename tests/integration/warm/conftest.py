"""Fixtures of the warm-executor equivalence tests: a one-host lab, one inventory, both executors on it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from labname import lab_name

from pytest_mh_ansible._private.ansible.executor import StandardExecutor
from pytest_mh_ansible._private.ansible.inventory import Inventory
from pytest_mh_ansible._private.ansible.warm import WarmExecutor
from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec, LabUserSpec

# One lab per xdist worker: lab names must differ for labs to coexist.
LAB_NAME = lab_name("mhwarm")


@pytest.fixture(scope="session")
def warm_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """One sysv host, server1, with a non-root sudo user whose sudo asks for the password."""
    spec = LabSpec(name=LAB_NAME, hosts=(LabHostSpec("server1", roles=("server",)),), user=LabUserSpec("labuser"))
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab


@pytest.fixture(scope="session")
def inventory(warm_lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    """The lab's inventory plus ``server1-user``: server1 logged into as the lab user (sudo with its password)."""
    base = tmp_path_factory.mktemp("mhwarm-inventory")
    root: dict[str, Any] = yaml.safe_load(warm_lab.inventory_path.read_text())["all"]["hosts"]["server1"]
    user_vars = {
        key: root[key]
        for key in ("ansible_host", "ansible_ssh_common_args", "ansible_python_interpreter", "ansible_ssh_pipelining")
        if key in root
    }
    user_vars.update(
        ansible_user=root["mh_lab_user"],
        ansible_password=root["mh_lab_user_password"],
        ansible_become_password=root["mh_lab_user_password"],
    )
    extra_path = base / "extra.yml"
    # ansible-core 2.21 leaves `invocation` out of results unless asked; the equivalence tests compare it.
    extra = {"all": {"vars": {"ansible_inject_invocation": True}, "hosts": {"server1-user": user_vars}}}
    extra_path.write_text(yaml.safe_dump(extra))
    return Inventory.load([str(warm_lab.inventory_path), str(extra_path)])


@pytest.fixture(scope="session")
def standard(inventory: Inventory) -> Iterator[StandardExecutor]:
    """The reference: ansible-core's own path for every module payload."""
    executor = StandardExecutor(inventory)
    yield executor
    executor.close()


@pytest.fixture(scope="session")
def standard_again(inventory: Inventory) -> Iterator[StandardExecutor]:
    """A second, independent standard executor: what differs between it and ``standard`` is noise."""
    executor = StandardExecutor(inventory)
    yield executor
    executor.close()


@pytest.fixture(scope="session")
def warm(inventory: Inventory) -> Iterator[WarmExecutor]:
    """The executor under test, on the same inventory (closing twice is harmless)."""
    executor = WarmExecutor(inventory)
    yield executor
    executor.close()


@pytest.fixture(scope="session")
def on_host(warm_lab: Lab) -> Any:
    """Run a shell script inside server1 (entering its namespaces, not over ssh): for set-up and checks."""

    def run(script: str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = warm_lab.run_inside("server1", "set -e\n" + script, timeout=60)
        if check and done.returncode != 0:
            raise AssertionError(f"on server1: {script!r} -> rc={done.returncode}\n{done.stdout}\n{done.stderr}")
        return done

    return run
