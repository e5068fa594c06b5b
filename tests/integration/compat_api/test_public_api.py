"""pytest-mh 1.0.30's whole public API, introspected from the real package, is served by the layer.

pytest-mh 1.0.30 is installed from PyPI into a side virtualenv (``bench/.venv-pytest-mh``, made by
``bench/compat_suite.py``); ``tests/compat_api/introspect.py`` describes its public API there, and
``tests/compat_api/check.py`` looks every name, class member, parameter list and base up in the layer
of this virtualenv (the installed wheel in CI). Nothing may be missing; the only exception is a
name that needs Windows, which must exist and raise an error that says so (``check.WINDOWS_ONLY``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import compat_suite

ROOT = Path(__file__).resolve().parents[3]
TOOLS = ROOT / "tests" / "compat_api"
COMMITTED = TOOLS / "pytest-mh-1.0.30.json"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pytest_mh_python() -> Path:
    """The side virtualenv's Python (``ensure_venv`` makes it under a lock: another test may want it too)."""
    return compat_suite.ensure_venv()


@pytest.fixture(scope="module")
def api(pytest_mh_python: Path) -> dict[str, Any]:
    result = subprocess.run(
        [str(pytest_mh_python), "-I", str(TOOLS / "introspect.py")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_public_api__the_committed_description_is_pytest_mh_1_0_30s(api: dict[str, Any]) -> None:
    """The JSON that the docs page is generated from is what introspecting the release gives."""
    assert api["version"] == "1.0.30"
    assert api == json.loads(COMMITTED.read_text()), (
        "tests/compat_api/pytest-mh-1.0.30.json differs from the introspection of pytest-mh 1.0.30: run "
        "bench/.venv-pytest-mh/bin/python tests/compat_api/introspect.py > tests/compat_api/pytest-mh-1.0.30.json"
    )


def test_public_api__nothing_is_missing_from_the_layer(api: dict[str, Any], tmp_path: Path) -> None:
    """Every module, name, class member, parameter list and base of pytest-mh 1.0.30, in this virtualenv's layer."""
    described = tmp_path / "api.json"
    described.write_text(json.dumps(api))
    gaps = tmp_path / "gaps.txt"
    result = subprocess.run(
        [sys.executable, str(TOOLS / "check.py"), str(described), "--gaps", str(gaps)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    print(result.stdout)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr[-2000:]
    # the counts of the four categories are in the last line: api: 78/78 names, ...
    assert result.returncode == 0, f"{summary}\n\n{result.stdout}{result.stderr[-3000:]}"
    gap_lines = [line for line in result.stdout.splitlines() if not line.startswith(("#", "api:", "windows "))]
    assert not gap_lines
    assert summary.startswith("api: ")
    for part in summary.removeprefix("api: ").split(", "):
        passed, _, rest = part.partition("/")
        assert passed == rest.split()[0], summary
