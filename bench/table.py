"""The README's performance table, in Markdown, from one JSON of ``bench/compare.py`` (by default the newest).

Usage::

    python3 bench/table.py                                # the newest bench/results/compare-*.json
    python3 bench/table.py bench/results/compare-....json

Columns: the product's default path first (the bundled utilities), then raw commands, then pytest-mh's
eager (its default) and lazy modes; each of ours with its ratio against the better pytest-mh mode.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare import ROWS, SHARED, best_pytest_mh, fmt
from compare_suites import VARIANTS

RESULTS = Path(__file__).resolve().parent / "results"
OURS = ("ours-util", "ours-raw")
THEIRS = ("pytest-mh-eager", "pytest-mh")


def table(result: dict[str, Any]) -> str:
    figures: dict[str, dict[str, float | None]] = result["figures"]
    best = best_pytest_mh(figures) or {}
    ours = [v for v in OURS if v in figures]
    theirs = [v for v in THEIRS if v in figures]
    head = ["figure", *(VARIANTS[v] for v in ours), *(VARIANTS[v] for v in theirs)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    noisy = False
    for label, key, unit in ROWS:
        cells = [label]
        for v in ours:
            value = figures[v].get(key)
            if v != "ours-raw" and key in SHARED:
                cells.append("(as raw)")
                continue
            base = best.get(key)
            ratio = f" ({value / base:.2f})" if value is not None and base else ""
            cells.append(fmt(value, unit) + ratio)
        for v in theirs:
            cell = fmt(figures[v].get(key), unit)
            if _spread_wider_than_figure(result, v, key):
                cell += " †"
                noisy = True
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    config = result["config"]
    load = ", ".join(f"{x:.1f}" for x in config.get("loadavg_before", []))
    lines.append("")
    lines.append(
        f"Run of {config.get('date_utc', '?')}, commit {str(config.get('commit', '?'))[:10]}, "
        f"pytest-mh {config.get('pytest_mh')}, ansible-core {config.get('ansible_core')}, "
        f"{config.get('rounds')} rounds, suite of {config.get('suite_tests')}; load average before {load}. "
        "Ratios: ours / the better of pytest-mh's eager and lazy modes."
    )
    if noisy:
        lines.append("")
        lines.append(
            "† Its rounds spread wider than the figure itself (max - min > median): an operation's figure is the "
            "median of its tests minus that of the empty test, two medians that hold pytest-mh's per-test backup "
            "and restore in eager mode; the ratio against it is a range, not a measure."
        )
    return "\n".join(lines)


def _spread_wider_than_figure(result: dict[str, Any], variant: str, key: str) -> bool:
    """Whether an operation's per-round samples spread wider than its figure (their median)."""
    op = key.removesuffix("_rollback_ms")
    samples = result.get("samples", {}).get(variant, {}).get("ops_ms", {}).get(op) or []
    figure = result["figures"][variant].get(key)
    return op != key and len(samples) > 1 and figure is not None and max(samples) - min(samples) > abs(figure)


def main(argv: list[str]) -> int:
    if argv:
        path = Path(argv[0])
    else:
        runs = sorted(RESULTS.glob("compare-*.json"))
        if not runs:
            print(f"no results in {RESULTS}", file=sys.stderr)
            return 1
        path = runs[-1]
    print(table(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
