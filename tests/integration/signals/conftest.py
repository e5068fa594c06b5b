"""Fixtures of the signal tests: a lab with one client and one server of their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

LAB_NAME = lab_name("mhsig")


@pytest.fixture(scope="session")
def sig_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """client1 (role client) and server1 (role server), both sysv hosts."""
    spec = LabSpec(
        name=LAB_NAME,
        hosts=(LabHostSpec("client1", roles=("client",)), LabHostSpec("server1", roles=("server",))),
    )
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab
