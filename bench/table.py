"""The performance tables of README.md and docs/performance.md, built from one JSON of ``bench/compare.py``.

Usage::

    python3 bench/table.py                          # README's table from the newest bench/results/compare-*.json
    python3 bench/table.py RUN.json                 # ... from that run
    python3 bench/table.py RUN.json --docs          # docs/performance.md's table (every variant of the run)
    python3 bench/table.py RUN.json --write         # put both tables into README.md and docs/performance.md
    python3 bench/table.py RUN.json --check         # exit 1 if either file's table is not what RUN.json gives

README's columns: the product's default path (the bundled utilities), the generic module path
(``host.ansible.run`` on the warm executor), raw commands, then pytest-mh's eager (its default) and
lazy modes; each of ours with its ratio against the better pytest-mh mode. The docs table has every
variant the run measured. Under each table: the JSON it comes from, the run's settings, the load,
the hosts' fingerprint checks and the modules behind the ``host.ansible.run`` column.

In a file, a table is the text between ``<!-- compare-table -->`` and ``<!-- /compare-table -->``;
a file without those markers has its first table whose header starts ``| figure | ours (utilities``
(and the notes right under it) replaced, the markers put around it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare import ROWS, SHARED, SHARES_CONN, best_pytest_mh, fmt
from compare_suites import MODULES, VARIANTS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
README = ROOT / "README.md"
DOCS = ROOT / "docs" / "performance.md"
# README's columns, in order: the default path, the generic module path, raw commands; then pytest-mh
README_OURS = ("ours-util", "ours-mod", "ours-raw")
ALL_OURS = ("ours-util", "ours-mod", "ours-mod-standard", "ours-raw")
THEIRS = ("pytest-mh-eager", "pytest-mh")
BEGIN = "<!-- compare-table -->"
END = "<!-- /compare-table -->"
LEGACY_HEADER = "| figure | ours (utilities"
SPREAD_NOTE = (
    "† Its rounds spread wider than the figure itself (max - min > median): an operation's figure is the "
    "median of its tests minus that of the empty test, two medians that hold pytest-mh's per-test backup "
    "and restore in eager mode; the ratio against it is a range, not a measure."
)


def table(result: dict[str, Any], source: str | None = None, *, ours: tuple[str, ...] = README_OURS) -> str:
    """The Markdown table of ``result`` (a compare.py JSON) with its notes.

    :param source: The JSON's path as the text names it (``bench/results/compare-….json``).
    :param ours: Our variants to show, in order (those the run has).
    """
    figures: dict[str, dict[str, float | None]] = result["figures"]
    best = best_pytest_mh(figures) or {}
    mine = [v for v in ours if v in figures]
    theirs = [v for v in THEIRS if v in figures]
    head = ["figure", *(VARIANTS[v] for v in mine), *(VARIANTS[v] for v in theirs)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    noisy = False
    for label, key, unit in ROWS:
        if all(figures[v].get(key) is None for v in figures):
            continue  # a row this run did not measure (an older run, --ops)
        cells = [label]
        for v in mine:
            value = figures[v].get(key)
            if v in SHARES_CONN and key in SHARED and "ours-raw" in figures:
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
    lines += ["", _run_note(result, source)]
    checks = _fingerprint_note(result)
    if checks:
        lines += ["", checks]
    modules = _modules_note(result, mine)
    if modules:
        lines += ["", modules]
    if noisy:
        lines += ["", SPREAD_NOTE]
    return "\n".join(lines)


def _run_note(result: dict[str, Any], source: str | None) -> str:
    config = result["config"]
    load = ", ".join(f"{x:.1f}" for x in config.get("loadavg_before", []))
    suite_runs = config.get("suite_rounds", 1)
    text = (
        f"Run of {config.get('date_utc', '?')}, commit {str(config.get('commit', '?'))[:10]}, "
        f"pytest-mh {config.get('pytest_mh')}, ansible-core {config.get('ansible_core')}, "
        f"{config.get('rounds')} rounds of {config.get('ops_tests_per_kind_per_round')} tests per operation, "
        f"suite of {config.get('suite_tests')} run {suite_runs} "
        f"time{'s' if suite_runs != 1 else ''} per tool; load average before {load}. "
        "Ratios: ours / the better of pytest-mh's eager and lazy modes."
    )
    if source:
        text += f" Figures: `{source}`."
    return text


def _fingerprint_note(result: dict[str, Any]) -> str:
    check = result["config"].get("fingerprint")
    if not check:
        return ""
    hosts = ", ".join(check.get("hosts", []))
    return (
        f"The hosts ({hosts}) were fingerprinted after each of the {check.get('checks')} pytest runs "
        "(/etc and /root, packages and apt's marks, the service's state, /tmp and /home): every one equal to the start."
    )


def _modules_note(result: dict[str, Any], shown: list[str]) -> str:
    if not any(v.startswith("ours-mod") for v in shown):
        return ""
    modules: dict[str, str] = result["config"].get("modules") or MODULES
    measured = {op for v in shown for op in modules if result["figures"][v].get(f"{op}_rollback_ms") is not None}
    by_module: dict[str, list[str]] = {}
    for op, module in modules.items():
        if op in measured:
            by_module.setdefault(module, []).append(op)
    parts = [f"`{module}` ({', '.join(ops)})" for module, ops in by_module.items()]
    return "`host.ansible.run` calls, per row: " + ", ".join(parts) + "; the rollback journal undoes each."


def _spread_wider_than_figure(result: dict[str, Any], variant: str, key: str) -> bool:
    """Whether an operation's per-round samples spread wider than its figure (their median)."""
    op = key.removesuffix("_rollback_ms")
    samples = result.get("samples", {}).get(variant, {}).get("ops_ms", {}).get(op) or []
    figure = result["figures"][variant].get(key)
    return op != key and len(samples) > 1 and figure is not None and max(samples) - min(samples) > abs(figure)


def block(result: dict[str, Any], source: str | None, *, docs: bool = False) -> str:
    """The text between the markers of README.md (``docs=False``) or docs/performance.md."""
    return table(result, source, ours=ALL_OURS if docs else README_OURS)


def current(text: str) -> tuple[int, int] | None:
    """Where the table of ``text`` is (start, end offsets of the text to replace), None if it has none."""
    start = text.find(BEGIN)
    if start >= 0:
        end = text.find(END, start)
        if end < 0:
            raise ValueError(f"{BEGIN} without {END}")
        return start, end + len(END)
    found = re.search(rf"^{re.escape(LEGACY_HEADER)}.*$", text, flags=re.MULTILINE)
    if found is None:
        return None
    # the table's lines, then its one-line notes ("Run of ...", "† ..."), blank lines between them
    pos = end = found.start()
    for line in text[pos:].split("\n"):
        if not (line == "" or line.startswith(("|", "Run of ", "† "))):
            break
        pos += len(line) + 1
        if line:
            end = pos - 1
    return found.start(), end


def replaced(text: str, new_block: str) -> str:
    """``text`` with its table (see :func:`current`) replaced by ``new_block`` between the markers."""
    where = current(text)
    if where is None:
        raise ValueError(f"no table: neither {BEGIN} nor a line starting {LEGACY_HEADER!r}")
    start, end = where
    return text[:start] + f"{BEGIN}\n{new_block}\n{END}" + text[end:]


def differs(text: str, new_block: str) -> bool:
    """Whether the table in ``text`` is not ``new_block``."""
    where = current(text)
    if where is None:
        return True
    old = text[where[0] : where[1]]
    if old.startswith(BEGIN):
        old = old[len(BEGIN) : -len(END)]
    return old.strip("\n") != new_block


def newest_run(results: Path = RESULTS) -> Path | None:
    """The newest full run (``compare-<stamp>-<commit>.json``; quick runs are ``compare-quick-…``)."""
    runs = sorted(p for p in results.glob("compare-*.json") if p.name[len("compare-") :][:1].isdigit())
    return runs[-1] if runs else None


def source_name(path: Path) -> str:
    """``path`` as the tables name it: relative to the repository when it is in it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return path.name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", nargs="?", type=Path, help="a compare.py JSON (default: the newest full run)")
    parser.add_argument("--docs", action="store_true", help="print docs/performance.md's table instead of README's")
    parser.add_argument("--write", action="store_true", help="write both tables into README.md and the docs page")
    parser.add_argument("--check", action="store_true", help="exit 1 if a file's table is not what the JSON gives")
    parser.add_argument("--readme", type=Path, default=README, help=argparse.SUPPRESS)
    parser.add_argument("--docs-file", type=Path, default=DOCS, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    path = options.json or newest_run()
    if path is None:
        print(f"no results in {RESULTS}", file=sys.stderr)
        return 1
    result = json.loads(path.read_text())
    name = source_name(path)
    targets = {options.readme: block(result, name), options.docs_file: block(result, name, docs=True)}
    if options.write:
        for target, text in targets.items():
            target.write_text(replaced(target.read_text(), text))
            print(f"{target}: table of {name}")
    if options.check:
        stale = [str(t) for t, text in targets.items() if differs(t.read_text(), text)]
        for target in stale:
            print(f"{target}: its table is not the one {name} gives (python3 bench/table.py {name} --write)")
        return 1 if stale else 0
    if not options.write:
        print(targets[options.docs_file if options.docs else options.readme])
    return 0


if __name__ == "__main__":
    sys.exit(main())
