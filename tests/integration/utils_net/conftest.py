"""Fixtures of the network utilities' integration tests: a lab with a client and two servers (nftables, iptables)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

LAB_NAME = lab_name("mhutilb")


@pytest.fixture(scope="session")
def utils_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """client1, server1 and server2 (sysv), with nftables and iptables installed from the lab's cache."""
    spec = LabSpec(
        name=LAB_NAME,
        hosts=(
            LabHostSpec("client1", roles=("client",)),
            LabHostSpec("server1", roles=("server",)),
            LabHostSpec("server2", roles=("server",)),
        ),
        packages=("nftables", "iptables"),
    )
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab
