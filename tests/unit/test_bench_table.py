"""bench/table.py: the README's table from a run's JSON, with the pytest-mh figures too noisy to compare marked."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def table() -> Any:
    sys.path.insert(0, str(BENCH))
    try:
        import table as module
    finally:
        sys.path.remove(str(BENCH))
    return module.table


def run(eager_useradd: list[float], eager_write: list[float]) -> dict[str, Any]:
    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    ops = {"useradd": eager_useradd, "write": eager_write}
    return {
        "config": {"date_utc": "2026-12-06T00:00:00Z", "commit": "abc", "rounds": 3, "loadavg_before": [0.1]},
        "figures": {
            "ours-util": {"useradd_rollback_ms": 60.0, "write_rollback_ms": 50.0},
            "pytest-mh-eager": {f"{op}_rollback_ms": median(v) for op, v in ops.items()},
            "pytest-mh": {"useradd_rollback_ms": 120.0, "write_rollback_ms": 140.0},
        },
        "samples": {"pytest-mh-eager": {"ops_ms": ops}},
    }


def test_table__pytest_mh_figure_whose_rounds_spread_wider_than_itself_is_marked(table: Any) -> None:
    text = table(run(eager_useradd=[-32.2, 68.4, 22.6], eager_write=[30.0, 33.0, 31.8]))
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("|")}
    assert "22.6 ms †" in rows["useradd + rollback"]
    assert "31.8 ms |" in rows["file write (existing) + rollback"]  # steady: no mark
    assert "† Its rounds spread wider than the figure itself" in text


def test_table__no_footnote_when_every_figure_is_steady(table: Any) -> None:
    text = table(run(eager_useradd=[20.0, 22.0, 21.0], eager_write=[30.0, 33.0, 31.8]))
    assert "†" not in text


def test_readme__quotes_the_newest_committed_run_as_table_py_prints_it(table: Any) -> None:
    """Issue #15: the README's performance table is the latest run's, built from its JSON, not typed."""
    newest = max((BENCH / "results").glob("compare-*.json"), key=lambda path: path.name)
    expected = table(json.loads(newest.read_text())).strip()
    readme = (BENCH.parent / "README.md").read_text()
    assert expected.splitlines()[0] in readme, f"README.md has no table with the header of {newest.name}"
    assert expected in readme, f"README.md's performance table is not the one bench/table.py makes of {newest.name}"
