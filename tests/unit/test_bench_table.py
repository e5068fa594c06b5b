"""bench/table.py: README's and the docs' performance tables built from a run's JSON, and the check that they are."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def tables() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        import table as module
    finally:
        sys.path.remove(str(BENCH))
    return module


def run(eager_useradd: list[float], eager_write: list[float]) -> dict[str, Any]:
    """A small compare.py JSON: ours (utilities, modules warm and standard, raw) and pytest-mh's two modes."""

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    ops = {"useradd": eager_useradd, "write": eager_write}
    return {
        "config": {
            "date_utc": "2026-12-06T00:00:00Z",
            "commit": "abc",
            "rounds": 3,
            "suite_rounds": 3,
            "suite_tests": 200,
            "loadavg_before": [0.1],
            "modules": {"write": "ansible.builtin.copy", "useradd": "ansible.builtin.user"},
            "fingerprint": {"hosts": ["client1", "server1"], "checks": 42, "drift": None},
        },
        "figures": {
            "ours-util": {"useradd_rollback_ms": 60.0, "write_rollback_ms": 50.0, "raw_true_median_ms": None},
            "ours-mod": {"useradd_rollback_ms": 90.0, "write_rollback_ms": 300.0, "raw_true_median_ms": None},
            "ours-mod-standard": {
                "useradd_rollback_ms": 350.0,
                "write_rollback_ms": 1500.0,
                "raw_true_median_ms": 15.0,
            },
            "ours-raw": {"useradd_rollback_ms": 50.0, "write_rollback_ms": 25.0, "raw_true_median_ms": 4.0},
            "pytest-mh-eager": {f"{op}_rollback_ms": median(v) for op, v in ops.items()} | {"raw_true_median_ms": 48.0},
            "pytest-mh": {"useradd_rollback_ms": 120.0, "write_rollback_ms": 140.0, "raw_true_median_ms": 50.0},
        },
        "samples": {"pytest-mh-eager": {"ops_ms": ops}},
    }


def rows(text: str) -> dict[str, list[str]]:
    """Label -> cells of each table row."""
    out = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| figure"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            out[cells[0]] = cells[1:]
    return out


def test_table__pytest_mh_figure_whose_rounds_spread_wider_than_itself_is_marked(tables: ModuleType) -> None:
    text = tables.table(run(eager_useradd=[-32.2, 68.4, 22.6], eager_write=[30.0, 33.0, 31.8]))
    assert rows(text)["useradd + rollback"][3] == "22.6 ms †"
    assert rows(text)["file write (existing) + rollback"][3] == "31.8 ms"  # steady: no mark
    assert "† Its rounds spread wider than the figure itself" in text


def test_table__no_footnote_when_every_figure_is_steady(tables: ModuleType) -> None:
    text = tables.table(run(eager_useradd=[20.0, 22.0, 21.0], eager_write=[30.0, 33.0, 31.8]))
    assert "†" not in text


def test_table__readme_columns_are_utilities_module_path_raw_then_pytest_mh(tables: ModuleType) -> None:
    text = tables.table(run([20.0, 22.0, 21.0], [30.0, 33.0, 31.8]))
    assert text.splitlines()[0] == (
        "| figure | ours (utilities, the default path) | ours (host.ansible.run, warm) | ours (raw commands)"
        " | pytest-mh (eager, its default) | pytest-mh (lazy) |"
    )
    # each of ours with its ratio against the better pytest-mh mode (eager here: 31.8 ms)
    assert rows(text)["file write (existing) + rollback"][:3] == ["50.0 ms (1.57)", "300 ms (9.43)", "25.0 ms (0.79)"]


def test_table__connection_figures_of_the_warm_paths_are_the_raw_ones_the_standard_executor_its_own(
    tables: ModuleType,
) -> None:
    text = tables.block(run([20.0, 22.0, 21.0], [30.0, 33.0, 31.8]), None, docs=True)
    assert "ours (host.ansible.run, standard)" in text.splitlines()[0]
    assert rows(text)["raw command `true`, median"][:4] == ["(as raw)", "(as raw)", "15.0 ms (0.31)", "4.0 ms (0.08)"]


def test_table__names_its_json_the_fingerprint_checks_and_the_modules_of_the_module_column(
    tables: ModuleType,
) -> None:
    text = tables.table(run([20.0, 22.0, 21.0], [30.0, 33.0, 31.8]), "bench/results/compare-x.json")
    assert "Figures: `bench/results/compare-x.json`." in text
    assert "suite of 200 run 3 times per tool" in text
    assert "after each of the 42 pytest runs" in text
    assert "`ansible.builtin.copy` (write), `ansible.builtin.user` (useradd)" in text


def test_table__rows_that_no_variant_measured_are_left_out(tables: ModuleType) -> None:
    text = tables.table(run([20.0, 22.0, 21.0], [30.0, 33.0, 31.8]))
    assert "template over an existing file + rollback" not in rows(text)
    assert "useradd + rollback" in rows(text)


def write_json(tmp_path: Path, result: dict[str, Any]) -> Path:
    path = tmp_path / "compare-20261206T000000Z-abc.json"
    path.write_text(json.dumps(result))
    return path


LEGACY = """# Project

Intro.

| figure | ours (utilities, the default path) | pytest-mh (lazy) |
|---|---|---|
| useradd + rollback | 1 ms | 2 ms |

Run of yesterday.

† An old footnote.

(*) A note that stays.
"""


def test_write_then_check__replaces_the_legacy_table_and_its_notes_and_leaves_the_rest(
    tables: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_json(tmp_path, run([20.0, 22.0, 21.0], [30.0, 33.0, 31.8]))
    readme, docs = tmp_path / "README.md", tmp_path / "performance.md"
    readme.write_text(LEGACY)
    docs.write_text(LEGACY)
    argv = [str(path), "--readme", str(readme), "--docs-file", str(docs)]
    assert tables.main([*argv, "--check"]) == 1
    assert tables.main([*argv, "--write"]) == 0
    assert tables.main([*argv, "--check"]) == 0
    text = readme.read_text()
    assert text.startswith("# Project\n\nIntro.\n\n<!-- compare-table -->\n| figure |")
    assert text.endswith("<!-- /compare-table -->\n\n(*) A note that stays.\n")
    assert "Run of yesterday" not in text
    assert "An old footnote" not in text
    assert "ours (host.ansible.run, standard)" in docs.read_text()  # every variant on the docs page
    assert "ours (host.ansible.run, standard)" not in text
    # a second write replaces the table between the markers, not a second copy
    assert tables.main([*argv, "--write"]) == 0
    assert readme.read_text() == text
    capsys.readouterr()


def test_check__fails_when_a_figure_in_the_file_was_edited(
    tables: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_json(tmp_path, run([20.0, 22.0, 21.0], [30.0, 33.0, 31.8]))
    readme, docs = tmp_path / "README.md", tmp_path / "performance.md"
    readme.write_text(LEGACY)
    docs.write_text(LEGACY)
    argv = [str(path), "--readme", str(readme), "--docs-file", str(docs)]
    tables.main([*argv, "--write"])
    readme.write_text(readme.read_text().replace("300 ms (9.43)", "200 ms (6.29)"))
    capsys.readouterr()
    assert tables.main([*argv, "--check"]) == 1
    out = capsys.readouterr().out
    assert f"{readme}: its table is not the one" in out
    assert str(docs) not in out


def test_newest_run__is_the_newest_full_run_not_a_quick_one(tables: ModuleType, tmp_path: Path) -> None:
    for name in ("compare-20261201T000000Z-a.json", "compare-20261207T000000Z-b.json", "compare-quick-2026.json"):
        (tmp_path / name).write_text("{}")
    assert tables.newest_run(tmp_path).name == "compare-20261207T000000Z-b.json"


def test_readme_and_docs__hold_the_tables_the_newest_committed_run_gives(
    tables: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #15, #33: the performance tables are the latest run's, built from its JSON, not typed."""
    newest = tables.newest_run()
    assert tables.main(["--check"]) == 0, capsys.readouterr().out + f" (newest: {newest.name})"
