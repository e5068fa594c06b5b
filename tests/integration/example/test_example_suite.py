"""The example suite (docs/examples/webapp) passes on its own lab, brought up and down by --mh-lab."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from labname import lab_name

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces, mounts, veths)"),
]

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "docs" / "examples" / "webapp"


def test_example_suite__passes_on_its_lab_and_leaves_nothing_behind() -> None:
    name = lab_name("webapp")
    spec = ROOT / "inventory" / "webapp.yml"
    if name != "webapp":  # another run (or xdist worker) may have its own webapp lab up: a spec of this name
        # beside the original, so that its group_vars apply the same way
        text = spec.read_text().replace("\nname: webapp\n", f"\nname: {name}\n")
        spec = spec.with_name(f".{name}.yml")
        spec.write_text(text)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", f"--mh-lab={spec}", "-v", "-p", "no:randomly"],
            cwd=EXAMPLE,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    finally:
        if spec.name != "webapp.yml":
            spec.unlink()
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "14 passed" in output, output
    # Every change the example makes is undone: its own playbooks' too (revert_paths, teardown), and the
    # packages of its setup (what the demo, scripts/demo.sh, checks too).
    assert "not reverted" not in output, output
    # Both server variants ran every test that their topology group covers.
    assert "test_playbook_from_a_role[nginx] PASSED" in output
    assert "test_playbook_from_a_role[lighttpd] PASSED" in output
    # --mh-lab tore its lab down: no network namespace of the lab is left.
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert f"{name}." not in netns
