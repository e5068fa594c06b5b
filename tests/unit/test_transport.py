"""The transport's process-wide preparation of Ansible."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pytest_mh_ansible._private.ansible import transport


def test_transport__ssh_askpass_helper_found_without_the_virtualenv_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = str(Path(sys.executable).parent)
    assert (Path(bindir) / "ansible").is_file()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    transport._find_ansible_programs()
    assert os.environ["PATH"] == f"/usr/bin:/bin:{bindir}"
    transport._find_ansible_programs()  # once only
    assert os.environ["PATH"] == f"/usr/bin:/bin:{bindir}"
