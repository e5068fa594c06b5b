"""Fixtures for testing the mh_ansible.rollback collection."""

from __future__ import annotations

from pathlib import Path

import pytest
from rollback_cli import LocalAnsible


@pytest.fixture
def local_ansible(tmp_path: Path) -> LocalAnsible:
    """Ansible CLIs on localhost with the repo's collections, working in a temporary directory."""
    return LocalAnsible(tmp_path / "ansible")
