"""Smoke test of ``bench/compare.py``: the quick run of our side only, on a lab of its own.

It times every operation but the package install: an install and a purge of ``tree`` cost ~10 s per
variant and its warm-up again (80 s of the run's 200 on a quiet machine, three times that in CI);
the engine's integration tests install and roll back packages, and the full bench times it. Our
module variant runs with the warm executor only (``--executors warm``, as the bench runs of
docs/performance.md): the standard one adds a variant and a ping per setting, the same harness code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_mh_ansible._private.ansible import compat

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="the bench brings up a lab (root only)"),
]

COMPARE = Path(__file__).resolve().parents[2] / "bench" / "compare.py"

OPS = ("write", "writenew", "restart", "stop", "useradd", "groupadd", "lineedit")  # all but pkginstall
FIGURES = (
    "raw_true_median_ms",
    "raw_true_p90_ms",
    "empty_test_ms",
    "write_rollback_ms",
    "writenew_rollback_ms",
    "restart_rollback_ms",
    "stop_rollback_ms",
    "useradd_rollback_ms",
    "groupadd_rollback_ms",
    "lineedit_rollback_ms",
    "suite_wall_s",
    "suite_per_test_ms",
    "suite_overhead_ms",
    "session_start_3_ms",
    "session_start_200_ms",
)


def test_compare_quick_ours(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    args = [sys.executable, str(COMPARE), "--quick", "--tools", "ours", "--suite-tests", "4", "--ops-reps", "1"]
    args += ["--ops", ",".join(OPS), "--executors", "warm"]
    args += ["--lab-name", "mhsmoke" + os.environ.get("MH_TEST_LAB_SUFFIX", ""), "--json", str(out), "--no-results"]
    # Generous: in CI it shares the machine with another xdist worker (alone: ~3.5 min on a busy machine).
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "ours (raw commands)" in proc.stdout
    assert "unused inventory hosts contacted: 0" in proc.stdout

    data = json.loads(out.read_text())
    assert data["config"]["suite_tests"] == 4
    assert data["config"]["rounds"] == 1
    assert data["config"]["ops_tests_per_kind_per_round"] == 1
    assert data["config"]["ops"] == list(OPS)
    assert list(data["figures"]) == ["ours-util", "ours-raw", "ours-mod"]  # the default path first
    assert data["config"]["executors"] == ["warm"]
    assert data["config"]["date_utc"]
    assert data["config"]["commit"]
    assert len(data["config"]["loadavg_before"]) == 3
    for variant, figures in data["figures"].items():
        for key in FIGURES:
            value = figures[key]
            assert isinstance(value, float), (variant, key, value)
        assert figures["pkginstall_rollback_ms"] is None, variant  # not timed: left empty, not zero
        assert figures["raw_true_median_ms"] > 0
        assert figures["raw_true_p90_ms"] >= figures["raw_true_median_ms"]
        assert figures["session_start_200_ms"] > 0
    assert data["ratios"] == {}  # no pytest-mh in this run
    assert data["unused_hosts_contacted"] == 0
    assert len(data["samples"]["ours-raw"]["raw_ms"]) == 50
    assert len(data["samples"]["ours-mod"]["suite"]) == 1

    settings = data["settings"]["figures"]
    # ssh three ways, and paramiko where ansible-core still has it (up to 2.20)
    assert len(settings) == 3 + compat.paramiko_plugin_available()
    for name, figures in settings.items():
        assert figures["raw_true_median_ms"] > 0, name
        assert figures["ping_median_ms"] > 0, name
        assert figures["ping_warm_median_ms"] == figures["ping_median_ms"], name
        assert "ping_standard_median_ms" not in figures, name
    # With the default ssh settings the warm agent serves every ping; paramiko cannot (no pipelining).
    default = next(figures for name, figures in settings.items() if "default" in name)
    assert default["warm_served"] > 0
    assert default["warm_fallbacks"] == 0
