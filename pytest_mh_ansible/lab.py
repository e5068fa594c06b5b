"""The local lab of isolated hosts on this machine (public names; the machinery is private)."""

from __future__ import annotations

from pytest_mh_ansible._private.lab.lab import Lab, LabHost
from pytest_mh_ansible._private.lab.services import dummy_init_script
from pytest_mh_ansible._private.lab.spec import LabHostSpec, LabSpec, LabUserSpec

__all__ = [
    "Lab",
    "LabHost",
    "LabHostSpec",
    "LabSpec",
    "LabUserSpec",
    "dummy_init_script",
]
