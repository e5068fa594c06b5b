"""Fixtures of the tests of what a run leaves on its hosts: a lab of a sysv client and a systemd server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

LAB_NAME = lab_name("mhtrace")


@pytest.fixture(scope="session")
def trace_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A sysv client and a systemd server (journald), so that both inits' hosts are looked at."""
    spec = LabSpec(
        name=LAB_NAME,
        hosts=(LabHostSpec("client1", roles=("client",)), LabHostSpec("server1", roles=("server",), init="systemd")),
    )
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab
