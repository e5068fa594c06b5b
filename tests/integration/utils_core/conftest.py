"""Fixtures of the bundled utilities' integration tests: a lab with a sysv and a systemd server."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec, LabUserSpec

LAB_NAME = "mhutila"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.geteuid() != 0:
        skip = pytest.mark.skip(reason="the lab needs root (network namespaces, mounts, veths)")
        for item in items:
            if "integration/utils_core" in str(item.path):
                item.add_marker(skip)


@pytest.fixture(scope="session")
def utils_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """server1 (sysv) and server2 (systemd), with 'tree' and 'cowsay' installable from the lab's cache."""
    spec = LabSpec(
        name=LAB_NAME,
        hosts=(
            LabHostSpec("server1", roles=("server",)),
            LabHostSpec("server2", roles=("server",), init="systemd"),
        ),
        packages=("tree", "cowsay"),
        user=LabUserSpec("labuser"),
    )
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab
