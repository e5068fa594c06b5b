"""Fixtures of the playbook export's integration test: two labs of the same shape (a client and a server)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

APT = "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-download --no-install-recommends nftables"
SECRET = "Exp0rt-S3cret-42"
"""A secret host variable of server1: it must not appear in any exported file."""


def _spec(name: str) -> LabSpec:
    return LabSpec(
        name=name,
        hosts=(
            LabHostSpec("client1", roles=("client",)),
            LabHostSpec("server1", roles=("server",), vars={"app_password": SECRET}),
        ),
        packages=("nftables",),
        password=True,  # ansible_password in the inventory: a secret the export must not write
    )


@pytest.fixture(scope="session")
def export_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """The hosts the failing test runs on."""
    name = lab_name("mhexp")
    with Lab(_spec(name), tmp_path_factory.mktemp("labs") / name) as lab:
        lab.run_inside("client1", APT, timeout=300)  # the firewall's backend, before any test
        yield lab


@pytest.fixture(scope="session")
def fresh_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """Fresh hosts of the same shape, where the exported playbooks are replayed."""
    name = lab_name("mhexq")
    with Lab(_spec(name), tmp_path_factory.mktemp("labs") / name) as lab:
        lab.run_inside("client1", APT, timeout=300)  # the firewall's backend, before any test
        yield lab
