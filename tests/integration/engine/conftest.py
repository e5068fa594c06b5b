"""Fixtures of the Ansible engine's integration tests: a lab with a sysv and a systemd server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec, LabUserSpec

LAB_NAME = lab_name("mheng")


@pytest.fixture(scope="session")
def engine_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """server1 (sysv) and server2 (systemd), with the package 'tree' installable from the lab's cache."""
    spec = LabSpec(
        name=LAB_NAME,
        hosts=(
            LabHostSpec("server1", roles=("server",)),
            LabHostSpec("server2", roles=("server",), init="systemd"),
        ),
        packages=("tree",),
        user=LabUserSpec("labuser"),
    )
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab
