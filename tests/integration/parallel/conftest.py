"""Fixtures of the parallel-run integration tests: a lab of two host sets (a client and a server each)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

LAB_NAME = lab_name("mhpool")


@pytest.fixture(scope="session")
def pool_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """Four sysv hosts: client1, client2, server1, server2."""
    spec = LabSpec(
        name=LAB_NAME,
        hosts=(
            LabHostSpec("client1", roles=("client",)),
            LabHostSpec("client2", roles=("client",)),
            LabHostSpec("server1", roles=("server",)),
            LabHostSpec("server2", roles=("server",)),
        ),
    )
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab
