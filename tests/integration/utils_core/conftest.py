"""Fixtures of the bundled utilities' integration tests: a lab with a sysv and a systemd server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec, LabUserSpec

LAB_NAME = lab_name("mhutila")


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
