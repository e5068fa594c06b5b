"""Fixtures of the warm-executor fault tests: a one-host lab of their own and a way into the host."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labname import lab_name

from pytest_mh_ansible._private.ansible.inventory import Inventory
from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

LAB_NAME = lab_name("mhwfault")


@pytest.fixture(scope="session")
def fault_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """One sysv host, server1, that can install the package tree (from the lab's cache)."""
    spec = LabSpec(name=LAB_NAME, hosts=(LabHostSpec("server1", roles=("server",)),), packages=("tree",))
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab


@pytest.fixture(scope="session")
def inventory(fault_lab: Lab) -> Inventory:
    return Inventory.load([str(fault_lab.inventory_path)])
