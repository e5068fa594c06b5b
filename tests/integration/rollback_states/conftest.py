"""Fixtures of the rollback-state tests: a sysv and a systemd host, and the packages the states need."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

LAB_NAME = lab_name("mhstates")


@pytest.fixture(scope="session")
def states_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """server1 (sysv) and server2 (systemd); installable: libnss-extrausers (an account served by NSS), acl, attr."""
    spec = LabSpec(
        name=LAB_NAME,
        hosts=(
            LabHostSpec("server1", roles=("server",)),
            LabHostSpec("server2", roles=("server",), init="systemd"),
        ),
        packages=("libnss-extrausers", "acl", "attr", "cowsay", "tree"),
    )
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab
