"""Fixtures of the reporting integration tests: a lab with one client and one server."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

LAB_NAME = "mhrep"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.geteuid() != 0:
        skip = pytest.mark.skip(reason="the lab needs root (network namespaces, mounts, veths)")
        for item in items:
            if "integration/reporting" in str(item.path):
                item.add_marker(skip)


@pytest.fixture(scope="session")
def rep_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """client1 (role client) and server1 (role server), both sysv hosts."""
    spec = LabSpec(
        name=LAB_NAME,
        hosts=(LabHostSpec("client1", roles=("client",)), LabHostSpec("server1", roles=("server",))),
    )
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab
