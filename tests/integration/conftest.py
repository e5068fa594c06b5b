"""Shared by the integration tests: they need lab hosts, and the lab needs root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).parent
# The transport tests fall back to a loopback sshd and decide for themselves (transport/conftest.py).
SELF_DECIDING = {HERE / "transport"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="the lab needs root (network namespaces, mounts, veths)")
    for item in items:
        path = Path(item.path)
        if HERE in path.parents and not any(d in path.parents for d in SELF_DECIDING):
            item.add_marker(skip)
