"""Smoke test of ``bench/pools.py``: our two variants on a tiny suite, on a 9-host lab of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="the bench brings up a lab (root only)"),
]

POOLS = Path(__file__).resolve().parents[2] / "bench" / "pools.py"


def test_pools_ours(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    args = [sys.executable, str(POOLS), "--tools", "ours", "--suite-tests", "6", "--rounds", "1", "--warmup-tests", "0"]
    args += ["--lab-name", "mhpsmoke" + os.environ.get("MH_TEST_LAB_SUFFIX", ""), "--json", str(out), "--no-results"]
    # ~40 s alone on the 2-core box (9 systemd hosts up, two runs of 6 tests, down); generous for a loaded CI
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "hosts used by two workers at once: 0" in proc.stdout

    data = json.loads(out.read_text())
    assert data["config"]["suite_tests"] == 6
    assert data["config"]["commit"]
    assert len(data["config"]["loadavg_before"]) == 3
    assert len(data["config"]["lab_hosts"]) == 9
    assert list(data["samples"]) == ["ours-serial", "ours-n3"]
    for samples in data["samples"].values():
        assert len(samples) == 1
        assert samples[0]["passed"] == 6
        assert samples[0]["wall_s"] > 0
    n3 = data["samples"]["ours-n3"][0]
    assert n3["host_overlaps"] == 0
    assert sum(w["tests"] for w in n3["workers"].values()) == 6
    hosts = [h for w in n3["workers"].values() for h in w["hosts"]]
    assert len(hosts) == len(set(hosts))  # each worker on hosts of its own
    assert set(data["ratios"]) == {"ours_n3_to_ours_serial"}  # no pytest-mh in this run
