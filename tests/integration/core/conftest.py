"""Fixtures of the core plugin's integration tests: a lab of three hosts, and inventories that point at it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec, LabUserSpec

LAB_NAME = lab_name("mhcore")


@pytest.fixture(scope="session")
def core_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """Three sysv hosts (client1, server1, server2) with a sudo user whose sudo asks for the password."""
    spec = LabSpec(
        name=LAB_NAME,
        hosts=(
            LabHostSpec("client1", roles=("client",)),
            LabHostSpec("server1", roles=("server",)),
            LabHostSpec("server2", roles=("server",)),
        ),
        user=LabUserSpec("labuser", sudo=True),
    )
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab


@pytest.fixture(scope="session")
def lab_vars(core_lab: Lab) -> dict[str, dict[str, Any]]:
    """The connection variables of each lab host, as the lab's inventory gives them."""
    data = yaml.safe_load(core_lab.inventory_path.read_text())
    return {name: dict(values) for name, values in data["all"]["hosts"].items()}
