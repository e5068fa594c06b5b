"""Each module of the package imports on its own, in a fresh interpreter.

An import cycle can hide as long as modules are imported in a lucky order (the package facade
imports everything, in one order). Importing each module first, alone, in a new interpreter
brings such a cycle out as an ``ImportError`` naming a partly initialised module.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_mh_ansible"


def _modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        # Data shipped with the wheel, and the agent that runs on the target's Python, not ours.
        if "_data" in rel.parts or rel.name == "warm_agent":
            continue
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        names.append(".".join(("pytest_mh_ansible", *parts)))
    return names


@pytest.mark.parametrize("module", _modules())
def test_module_imports_alone(module: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=False,
        cwd=PACKAGE.parent,
    )
    assert proc.returncode == 0, f"import {module} in a fresh interpreter failed:\n{proc.stderr}"
