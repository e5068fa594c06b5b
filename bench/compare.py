"""pytest-mh-ansible against pytest-mh on the same three lab hosts, as ratios taken in one run.

Usage (root: it brings up a lab)::

    python3 bench/compare.py --rounds 3 --executors warm   # the README's run (9 tests an operation a round)
    python3 bench/compare.py --quick               # 1 round, 20-test suite once (~5-8 min)
    python3 bench/compare.py --quick --tools ours  # no pytest-mh (no PyPI needed)
    python3 bench/compare.py --quick --executors warm   # our module suite with the warm executor only
    python3 bench/compare.py --json out.json --rounds 7

See bench/README.md, "Comparison with pytest-mh", for what each figure measures.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_lab import (
    BenchLab,
    bench_lab,
    contacted_spares,
    ensure_pytest_mh_venv,
    shell_join,
    tool_version,
    write_inventories,
)
from compare_state import HostState, StateDrift
from compare_suites import (
    MODULE_VARIANTS,
    MODULES,
    OPERATIONS,
    PYTEST_MH_VARIANTS,
    VARIANTS,
    ops_tests,
    raw_test,
    settings_test,
    start_test,
    suite_tests,
    write_variant,
)

_T = TypeVar("_T")
SPARES = 197
PACKAGE_UNDO = (
    "every variant purges what the install brought: dpkg --purge of the new packages, then their stanzas"
    " dropped from apt's extended_states (ours: the journal's undo of the apt module; pytest-mh and ours-raw:"
    " the same commands in the bench's own teardown)"
)
FINGERPRINT_WHAT = (
    "after every pytest run: compat_suite.fingerprints (/etc and /root: path, size, mode, owner) and the"
    " packages' dpkg state, apt's auto marks, blsvc.service's state, what is in /tmp and /home; equal to the start"
)
EXECUTORS = ("warm", "standard")
# variant -> the --mh-executor its runs get (ours-raw: none, its tests run no module)
VARIANT_EXECUTOR = {variant: executor for executor, variant in MODULE_VARIANTS.items()}
# our variants whose raw command and session start are ours-raw's (the same connection code: commands
# through the warm agent, the default): measured once. On the standard executor commands take an ssh
# client each, so that variant measures its own.
SHARES_CONN = ("ours-util", MODULE_VARIANTS["warm"])
OPS = OPERATIONS
HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SETTINGS: dict[str, dict[str, Any]] = {
    "ssh, pipelining + ControlPersist (default)": {},
    "ssh, pipelining off": {"ansible_ssh_pipelining": False},
    "ssh, ControlPersist off": {"ansible_ssh_args": "-C -o ControlMaster=no -o ControlPath=none"},
}
if importlib.util.find_spec("ansible.plugins.connection.paramiko_ssh") is not None:  # removed in ansible-core 2.21
    SETTINGS["paramiko"] = {"ansible_connection": "paramiko", "ansible_host_key_checking": False}


class BenchError(RuntimeError):
    """A pytest run of the bench failed."""


def write_results(result: dict[str, Any], kind: str, started: float, json_path: str | None, *, keep: bool) -> None:
    """Write a bench's result to ``json_path`` (if given) and, with ``keep``, to ``bench/results/``.

    The kept file is ``<kind>-<UTC start time>-<commit>.json``, the commit taken from ``result["config"]``.
    """
    targets = [Path(json_path)] if json_path else []
    if keep:
        RESULTS.mkdir(exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
        targets.append(RESULTS / f"{kind}-{stamp}-{result['config']['commit'][:10]}.json")
    for target in targets:
        target.write_text(json.dumps(result, indent=1) + "\n")
        print(f"JSON written to {target}")


def git_commit(here: Path = HERE) -> str:
    """The commit of the checkout ``here`` (the bench's own by default), with ``+dirty`` when it has changes."""

    def run(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=here, capture_output=True, text=True, check=False).stdout.strip()

    commit = run("rev-parse", "HEAD") or "unknown"
    dirty = run("status", "--porcelain", "--untracked-files=no")
    return commit + ("+dirty" if dirty else "")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


class Runner:
    """Runs one generated test file with one variant as its own pytest process and reads its timings."""

    def __init__(
        self, workdir: Path, blab: BenchLab, mh_python: Path | None, verbose: bool, source: Path | None = None
    ) -> None:
        self.workdir = workdir
        self.source = source
        self.blab = blab
        self.mh_python = mh_python
        self.verbose = verbose
        self.counter = 0
        self.dirs: dict[str, Path] = {}
        self.inventories: dict[str, tuple[Path, Path]] = {}
        # the hosts' state at the start; checked after every run (None: not checked)
        self.state: HostState | None = None
        self.stage = ""  # what the bench is at ("round 2/3"), for the drift message

    def variant_dir(self, variant: str) -> Path:
        if variant not in self.dirs:
            self.dirs[variant] = write_variant(self.workdir / variant, variant)
        return self.dirs[variant]

    def inventory(self, key: str, spares: int = 0, extra_vars: dict[str, Any] | None = None) -> tuple[Path, Path]:
        if key not in self.inventories:
            tag = f"-{len(self.inventories)}"
            self.inventories[key] = write_inventories(
                self.blab, self.workdir / "inventories", spares=spares, extra_vars=extra_vars, tag=tag
            )
        return self.inventories[key]

    def run(
        self,
        variant: str,
        name: str,
        content: str,
        inventory: str = "3",
        executor: str | None = None,
        *,
        extra_args: list[str] | None = None,
    ) -> dict[str, Any]:
        """Run test file ``name`` with ``content`` under ``variant``; return the timing data (+ wall, t0, out).

        ``executor`` (or the variant's own, ``VARIANT_EXECUTOR``) is passed as ``--mh-executor``;
        ``extra_args`` go to pytest before the test file (``-n 3``, ``-p plugin``). ``out`` is the path of
        the timing file (bench_timing's xdist workers write theirs next to it, ``<out>.<worker>``).
        """
        directory = self.variant_dir(variant)
        self.counter += 1
        test_file = directory / f"test_{name}_{self.counter:03d}.py"
        test_file.write_text(content)
        out = directory / f"out_{name}_{self.counter:03d}.json"
        ours_inv, mh_inv = self.inventories[inventory]
        if variant in PYTEST_MH_VARIANTS:
            assert self.mh_python is not None
            # one word: pytest takes a separate existing path for a test path before conftest.py adds --mh-config
            args = [str(self.mh_python), "-m", "pytest", f"--mh-config={mh_inv}"]
        else:
            args = [sys.executable, "-m", "pytest", "-i", str(ours_inv)]
            executor = executor or VARIANT_EXECUTOR.get(variant)
            if executor is not None:
                args.append(f"--mh-executor={executor}")
        args += ["-p", "bench_timing", "-p", "no:cacheprovider", "-q", "-rfE", *(extra_args or []), test_file.name]
        path = [str(directory)]
        if variant not in PYTEST_MH_VARIANTS and self.source is not None:
            path.append(str(self.source))  # before the editable install's path: that checkout's package
        # Nothing of a pytest that runs this bench (PYTEST_ADDOPTS, an xdist worker's PYTEST_XDIST_WORKER,
        # which names the timing files) reaches the suite's own pytest.
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        env.update(BENCH_OUT=str(out), PYTHONPATH=os.pathsep.join(path))
        # Both tools' modules compiled once and the bytecode reused, as on a user's machine, in one cache aside
        # for every variant: with PYTHONDONTWRITEBYTECODE (set by some containers) the side whose packages were
        # installed without bytecode (an editable install, a venv made under that variable) compiled
        # ansible-core and itself in every process, while pytest-mh's venv had its bytecode from pip.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(self.workdir / "pycache")
        if self.verbose:
            print(f"  [{variant}] {shell_join(args)}", flush=True)
        t0 = time.time()
        proc = subprocess.run(args, check=False, cwd=directory, env=env, capture_output=True, text=True)
        wall = time.time() - t0
        test_file.unlink()
        if proc.returncode != 0 or not out.exists():
            raise BenchError(
                f"{variant}: {name} failed (exit {proc.returncode}):\n{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"
            )
        data: dict[str, Any] = json.loads(out.read_text())
        failed = [nodeid for nodeid, outcome in data["outcomes"].items() if outcome != "passed"]
        if failed:
            raise BenchError(f"{variant}: {name}: not passed: {failed}\n{proc.stdout[-6000:]}")
        if self.state is not None:  # after the timings: the check is no part of any figure
            self.state.check(f"{self.stage}, {name} run of {VARIANTS.get(variant, variant)} ({test_file.name})")
        data["wall"] = wall
        data["t0"] = t0
        data["out"] = str(out)
        warm = data.get("warm") or {}
        if self.verbose:
            note = ""
            if warm.get("agent_starts_ms") or warm.get("served") or warm.get("fallbacks"):
                note = (
                    f" (warm: {len(warm['agent_starts_ms'])} agent starts, {warm['served']} payloads served,"
                    f" {sum(warm['fallbacks'].values())} on the standard path)"
                )
            print(f"    {wall:.1f} s{note}", flush=True)
        for line in warm.get("other", []):
            print(f"  [{variant}] {name}: {line}", flush=True)
        return data


def per_test(data: dict[str, Any]) -> dict[str, float]:
    """nodeid -> logstart..logfinish in ms."""
    return {nodeid: (t["finish"] - t["start"]) * 1000 for nodeid, t in data["tests"].items()}


def alternate(variants: list[_T], round_no: int) -> list[_T]:
    """``variants`` in even rounds, reversed in odd ones: no tool always runs first (or right after another)."""
    return variants if round_no % 2 == 0 else list(reversed(variants))


def new_warm_log() -> dict[str, Any]:
    return {"runs": 0, "agent_starts_ms": [], "served": 0, "fallbacks": {}}


def add_warm_log(total: dict[str, Any], data: dict[str, Any]) -> None:
    """Add what the warm executor logged in one run (bench_timing's ``warm``) to ``total``."""
    warm = data.get("warm") or {}
    total["runs"] += 1
    total["agent_starts_ms"].extend(warm.get("agent_starts_ms", []))
    total["served"] += warm.get("served", 0)
    for reason, count in (warm.get("fallbacks") or {}).items():
        total["fallbacks"][reason] = total["fallbacks"].get(reason, 0) + count


def measure(
    options: argparse.Namespace, runner: Runner, variants: list[str], log: Callable[[str], None]
) -> dict[str, Any]:
    # raw command and session start: the same code in every variant of ours (no module runs there)
    conn_variants = [v for v in variants if v not in SHARES_CONN]
    samples: dict[str, Any] = {
        v: {
            "raw_ms": [],
            "idle100_ms": [],
            "idle1000_ms": [],
            "empty_ms": [],
            "ops_ms": {op: [] for op in OPS},
            "start3_ms": [],
            "start200_ms": [],
            "suite": [],
            "warm_log": new_warm_log(),
        }
        for v in variants
    }
    runner.inventory("3")
    runner.inventory("200", spares=SPARES)
    contacted = 0
    for r in range(options.rounds):
        log(f"round {r + 1}/{options.rounds}")
        runner.stage = f"round {r + 1}/{options.rounds}"
        for v in alternate(conn_variants, r):
            data = runner.run(v, "raw", raw_test(20, options.raw_calls, options.idle_calls))
            samples[v]["raw_ms"].extend(data["extra"]["raw_ms"])
            samples[v]["idle100_ms"].extend(data["extra"]["idle100_ms"])
            samples[v]["idle1000_ms"].extend(data["extra"]["idle1000_ms"])
        for v in alternate(variants, r):
            data = runner.run(v, "ops", ops_tests(options.ops_reps, seed=r, ops=options.op_list))
            add_warm_log(samples[v]["warm_log"], data)
            times = per_test(data)
            by_kind: dict[str, list[float]] = {}
            for nodeid, ms in times.items():
                if "::test_warmup" in nodeid:  # one-time costs, not counted
                    continue
                match = re.search(r"::test_\d+_([a-z]+)", nodeid)
                if match is None:
                    raise BenchError(f"{v}: unexpected test id {nodeid!r}")
                kind = match.group(1)
                by_kind.setdefault(kind, []).append(ms)
            empty = statistics.median(by_kind["empty"])
            samples[v]["empty_ms"].append(empty)
            for op in options.op_list:
                samples[v]["ops_ms"][op].append(statistics.median(by_kind[op]) - empty)
        for inv, key in (("3", "start3_ms"), ("200", "start200_ms")):
            for v in alternate(conn_variants, r):
                data = runner.run(v, "start", start_test(), inventory=inv)
                samples[v][key].append((data["first_call"] - data["t0"]) * 1000)
        contacted = contacted_spares(runner.blab, SPARES)
    for r in range(options.suite_rounds):
        log(f"suite of {options.suite_tests} tests, run {r + 1}/{options.suite_rounds}")
        runner.stage = f"suite run {r + 1}/{options.suite_rounds}"
        for v in alternate(variants, r):
            data = runner.run(v, "suite", suite_tests(options.suite_tests))
            add_warm_log(samples[v]["warm_log"], data)
            times = per_test(data)
            calls = {nodeid: t.get("call", 0.0) * 1000 for nodeid, t in data["tests"].items()}
            samples[v]["suite"].append(
                {
                    "wall_s": data["wall"],
                    "span_s": max(t["finish"] for t in data["tests"].values())
                    - min(t["start"] for t in data["tests"].values()),
                    "per_test_ms": statistics.median(times.values()),
                    "overhead_ms": statistics.median(times[n] - calls[n] for n in times),
                }
            )
    contacted = max(contacted, contacted_spares(runner.blab, SPARES))
    for v in variants:
        if v in SHARES_CONN:  # same connection code as ours-raw: SHARED figures
            for key in ("raw_ms", "idle100_ms", "idle1000_ms", "start3_ms", "start200_ms"):
                samples[v][key] = samples["ours-raw"][key] if "ours-raw" in samples else []
    figures = {v: summarize(samples[v]) for v in variants}
    return {"figures": figures, "samples": samples, "unused_hosts_contacted": contacted}


def summarize(s: dict[str, Any]) -> dict[str, float | None]:
    suite = s["suite"]
    return {
        "raw_true_median_ms": median(s["raw_ms"]),
        "raw_true_p90_ms": percentile(s["raw_ms"], 0.9) if s["raw_ms"] else None,
        "raw_idle100_median_ms": median(s["idle100_ms"]),
        "raw_idle1000_median_ms": median(s["idle1000_ms"]),
        "empty_test_ms": median(s["empty_ms"]),
        **{f"{op}_rollback_ms": median(s["ops_ms"][op]) for op in OPS},
        "suite_wall_s": median([x["wall_s"] for x in suite]),
        "suite_per_test_ms": median([x["per_test_ms"] for x in suite]),
        "suite_overhead_ms": median([x["overhead_ms"] for x in suite]),
        "session_start_3_ms": median(s["start3_ms"]),
        "session_start_200_ms": median(s["start200_ms"]),
    }


def measure_settings(options: argparse.Namespace, runner: Runner, log: Callable[[str], None]) -> dict[str, Any]:
    """Raw ``true`` and ``ping`` per connection setting, the ping once per executor (``--executors``)."""
    executors: list[str] = options.executor_list
    samples: dict[str, dict[str, Any]] = {
        name: {
            "raw_ms": [],
            "module_ms": {e: [] for e in executors},
            "warm_log": {e: new_warm_log() for e in executors},
        }
        for name in SETTINGS
    }
    for name, extra in SETTINGS.items():
        runner.inventory(f"settings:{name}", extra_vars=extra)
    runs = [(name, e) for name in SETTINGS for e in executors]
    for r in range(options.settings_rounds):
        log(f"settings, round {r + 1}/{options.settings_rounds}")
        for name, executor in alternate(runs, r):
            data = runner.run(
                "ours-raw",
                "settings",
                settings_test(options.settings_raw_calls, options.settings_module_calls),
                inventory=f"settings:{name}",
                executor=executor,
            )
            samples[name]["raw_ms"].extend(data["extra"]["raw_ms"])
            samples[name]["module_ms"][executor].extend(data["extra"]["module_ms"])
            add_warm_log(samples[name]["warm_log"][executor], data)
    figures: dict[str, dict[str, Any]] = {}
    for name, s in samples.items():
        figures[name] = {"raw_true_median_ms": median(s["raw_ms"])}
        for e in executors:
            figures[name][f"ping_{e}_median_ms"] = median(s["module_ms"][e])
        # the plugin's default executor (warm) when it was measured
        figures[name]["ping_median_ms"] = figures[name][f"ping_{executors[0]}_median_ms"]
        if "warm" in executors:
            log_ = s["warm_log"]["warm"]
            figures[name]["warm_served"] = log_["served"]
            figures[name]["warm_fallbacks"] = sum(log_["fallbacks"].values())
    return {"figures": figures, "samples": samples, "executors": executors}


ROWS: list[tuple[str, str, str]] = [
    # label, key, unit
    ("raw command `true`, median", "raw_true_median_ms", "ms"),
    ("raw command `true`, p90", "raw_true_p90_ms", "ms"),
    ("raw command `true` after 0.1 s idle", "raw_idle100_median_ms", "ms"),
    ("raw command `true` after 1 s idle", "raw_idle1000_median_ms", "ms"),
    ("empty test, per test", "empty_test_ms", "ms"),
    ("file write (existing) + rollback", "write_rollback_ms", "ms"),
    ("file write (new file) + rollback", "writenew_rollback_ms", "ms"),
    ("service restart + rollback (*)", "restart_rollback_ms", "ms"),
    ("service stop + rollback (both start it again)", "stop_rollback_ms", "ms"),
    ("useradd + rollback", "useradd_rollback_ms", "ms"),
    ("groupadd + rollback", "groupadd_rollback_ms", "ms"),
    ("line edit in a config file + rollback", "lineedit_rollback_ms", "ms"),
    ("template over an existing file + rollback", "template_rollback_ms", "ms"),
    ("ini option + rollback", "inifile_rollback_ms", "ms"),
    ("new directory + rollback", "mkdir_rollback_ms", "ms"),
    ("package install (from apt's cache) + purge", "pkginstall_rollback_ms", "ms"),
    ("suite: wall", "suite_wall_s", "s"),
    ("suite: per test", "suite_per_test_ms", "ms"),
    ("suite: per-test overhead", "suite_overhead_ms", "ms"),
    ("session start, 3 hosts", "session_start_3_ms", "ms"),
    ("session start, 200 hosts", "session_start_200_ms", "ms"),
]


# figures of the connection code only: measured once for ours (raw commands), shared by ours (modules)
SHARED = (
    "raw_true_median_ms",
    "raw_true_p90_ms",
    "raw_idle100_median_ms",
    "raw_idle1000_median_ms",
    "session_start_3_ms",
    "session_start_200_ms",
)
OURS = ("ours-util", "ours-raw", *MODULE_VARIANTS.values())


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:.1f} {unit}" if unit == "s" or value < 100 else f"{value:.0f} {unit}"


def best_pytest_mh(figures: dict[str, dict[str, float | None]]) -> dict[str, float | None] | None:
    """Per figure, the better (lower) of pytest-mh's eager and lazy modes; None without pytest-mh.

    A figure of zero or less is no measure (an operation's figure is the median of its tests minus the
    empty test's, and eager mode's per-test backup and restore can be noisier than the operation): the
    other mode's is taken, or none.
    """
    modes = [figures[v] for v in PYTEST_MH_VARIANTS if v in figures]
    if not modes:
        return None
    best: dict[str, float | None] = {}
    for _, key, _unit in ROWS:
        values = [value for m in modes if (value := m.get(key)) is not None and value > 0]
        best[key] = min(values) if values else None
    return best


def ratios(figures: dict[str, dict[str, float | None]]) -> dict[str, dict[str, float | None]]:
    """ours-variant -> key -> ours / the better of pytest-mh's eager and lazy modes."""
    out: dict[str, dict[str, float | None]] = {}
    base = best_pytest_mh(figures)
    if base is None:
        return out
    for v in OURS:
        if v not in figures:
            continue
        out[v] = {}
        for _, key, _unit in ROWS:
            a, b = figures[v].get(key), base.get(key)
            out[v][key] = a / b if a is not None and b else None
    return out


def print_tables(result: dict[str, Any]) -> None:
    figures = result["figures"]
    variants = list(figures)
    rat = result["ratios"]
    headers = ["figure"] + [VARIANTS[v] for v in variants] + [f"{VARIANTS[v]} / pytest-mh (better)" for v in rat]
    rows = []
    for label, key, unit in ROWS:
        row = [label]
        for v in variants:
            shared = v in SHARES_CONN and "ours-raw" in figures and key in SHARED
            row.append("(same)" if shared else fmt(figures[v][key], unit))
        for v in rat:
            value = rat[v][key]
            shared = v in SHARES_CONN and "ours-raw" in rat and key in SHARED
            row.append("(same)" if shared else "-" if value is None else f"{value:.2f}")
        rows.append(row)
    _print_table(headers, rows)
    print(
        "(*) different undo work: a restart of a running service needs no undo here, while pytest-mh"
        " stops and starts it again (and daemon-reloads) at teardown; after a stop both start it again"
        " (pytest-mh with a daemon-reload and a stop first)"
    )
    print(f"unused inventory hosts contacted: {result['unused_hosts_contacted']}")
    for v in ("ours-util", "ours-mod"):
        if v in rat:
            parts = [f"{op} {value:.2f}" for op in OPS if (value := rat[v][f"{op}_rollback_ms"]) is not None]
            print(f"reversible operations, {VARIANTS[v]} / pytest-mh (better): {', '.join(parts)} (target: 1.0)")
    for v in variants:
        if v in SHARES_CONN:
            print(f"{VARIANTS[v]}: {describe_warm_log(result['samples'][v]['warm_log'])}")
    if result.get("settings"):
        settings = result["settings"]
        executors = settings["executors"]
        print()
        print("ours with connection settings (medians):")
        headers = ["settings", "raw `true`", *[f"ansible.builtin.ping, {e}" for e in executors]]
        if "warm" in executors:
            headers.append("warm: payloads served / on the standard path")
        srows = []
        for name, f in settings["figures"].items():
            row = [name, fmt(f["raw_true_median_ms"], "ms"), *[fmt(f[f"ping_{e}_median_ms"], "ms") for e in executors]]
            if "warm" in executors:
                row.append(f"{f['warm_served']} / {f['warm_fallbacks']}")
            srows.append(row)
        _print_table(headers, srows)
        if "warm" in executors:
            for name in settings["figures"]:
                reasons = settings["samples"][name]["warm_log"]["warm"]["fallbacks"]
                for reason, count in reasons.items():
                    print(f"  {name}: 'module payload on the standard path: {reason}' x{count}")


def describe_warm_log(log: dict[str, Any]) -> str:
    """One line on what the warm executor logged over a variant's runs."""
    if not log["runs"]:
        return "no runs"
    if not (log["agent_starts_ms"] or log["served"] or log["fallbacks"]):
        return f"{log['runs']} runs, no warm agent started and no module payload routed to one"
    starts = log["agent_starts_ms"]
    text = f"{log['runs']} runs, {len(starts)} warm agent starts"
    if starts:
        text += f" (median {statistics.median(starts):.0f} ms, max {max(starts):.0f} ms)"
    text += f", {log['served']} module payloads served warm, {sum(log['fallbacks'].values())} on the standard path"
    for reason, count in log["fallbacks"].items():
        text += f"; '{reason}' x{count}"
    return text


def _print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, help="rounds of raw command, operations, session start (5; quick 1)")
    parser.add_argument("--suite-tests", type=int, help="tests of the generated suite (200; quick 20)")
    parser.add_argument("--suite-rounds", type=int, help="runs of the suite per tool, alternating (3; quick 1)")
    parser.add_argument(
        "--ops-reps", type=int, help="tests of each operation per round and tool, their median taken (9; quick 2)"
    )
    parser.add_argument(
        "--ops",
        default=",".join(OPS),
        help="comma list of the operations timed (all: " + ",".join(OPS) + "); the others' figures are left empty",
    )
    parser.add_argument("--settings-rounds", type=int, default=1, help="runs of the settings test per setting (1)")
    parser.add_argument("--no-settings", action="store_true", help="skip the connection-settings table")
    parser.add_argument("--quick", action="store_true", help="1 round, 20-test suite, fewer calls")
    parser.add_argument("--tools", default="ours,pytest-mh", help="comma list of ours, pytest-mh (both)")
    parser.add_argument(
        "--executors",
        default="warm,standard",
        help="comma list of warm, standard: our module suite once per executor (both)",
    )
    parser.add_argument("--lab-name", default="mhcmp", help="lab name (mhcmp)")
    parser.add_argument("--reuse", action="store_true", help="reuse the lab if it is up, and leave it up")
    parser.add_argument("--keep", action="store_true", help="keep the generated suites and their output")
    parser.add_argument("--json", metavar="FILE", help="write both tables, the configuration and all samples")
    parser.add_argument(
        "--source",
        type=Path,
        help="run our variants with pytest_mh_ansible from this checkout (another commit: before/after figures)",
    )
    parser.add_argument("--no-results", action="store_true", help="do not write the JSON to bench/results/")
    parser.add_argument("-v", "--verbose", action="store_true", help="log each pytest run")
    options = parser.parse_args(argv)
    tools = {t.strip() for t in options.tools.split(",") if t.strip()}
    if not tools or tools - {"ours", "pytest-mh"}:
        parser.error("--tools takes a comma list of: ours, pytest-mh")
    options.tool_set = tools
    executors = [e.strip() for e in options.executors.split(",") if e.strip()]
    if not executors or set(executors) - set(EXECUTORS) or len(set(executors)) != len(executors):
        parser.error("--executors takes a comma list of: warm, standard")
    options.executor_list = [e for e in EXECUTORS if e in executors]  # warm (the plugin's default) first
    ops = [o.strip() for o in options.ops.split(",") if o.strip()]
    if not ops or set(ops) - set(OPS) or len(set(ops)) != len(ops):
        parser.error(f"--ops takes a comma list of: {', '.join(OPS)}")
    options.op_list = [o for o in OPS if o in ops]
    if options.rounds is None:
        options.rounds = 1 if options.quick else 5
    if options.suite_tests is None:
        options.suite_tests = 20 if options.quick else 200
    if options.suite_rounds is None:
        options.suite_rounds = 1 if options.quick else 3
    if options.ops_reps is None:
        # pytest-mh's eager figure of an operation is the difference of two medians of ~400 ms tests (its
        # per-test backup and restore); with 3 tests a kind a round it moved by ±50 ms between rounds.
        options.ops_reps = 2 if options.quick else 9
    options.raw_calls = 50 if options.quick else 100
    options.idle_calls = 10 if options.quick else 20  # each after 0.1 s, and as many / 4 after 1 s
    options.settings_raw_calls = 20 if options.quick else 50
    options.settings_module_calls = 3 if options.quick else 10
    if min(options.rounds, options.suite_tests, options.suite_rounds, options.settings_rounds, options.ops_reps) < 1:
        parser.error("counts must be at least 1")
    return options


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    if os.geteuid() != 0:
        print("compare.py brings up a lab and needs root", file=sys.stderr)
        return 2
    started = time.time()

    def log(message: str) -> None:
        print(f"[{time.time() - started:6.1f} s] {message}", flush=True)

    from pytest_mh_ansible.host import MultihostHost

    variants: list[str] = []
    mh_python: Path | None = None
    if "ours" in options.tool_set:  # the product's default path first
        variants += ["ours-util", "ours-raw"]
        if hasattr(MultihostHost, "ansible"):
            variants += [MODULE_VARIANTS[e] for e in options.executor_list]
    if "pytest-mh" in options.tool_set:
        mh_python = ensure_pytest_mh_venv(log)
        variants += list(PYTEST_MH_VARIANTS)
    config = {
        "rounds": options.rounds,
        "suite_tests": options.suite_tests,
        "suite_rounds": options.suite_rounds,
        "settings_rounds": 0 if options.no_settings else options.settings_rounds,
        "raw_calls_per_round": options.raw_calls,
        "ops_tests_per_kind_per_round": options.ops_reps,
        "ops": options.op_list,
        "quick": options.quick,
        "variants": variants,
        "executors": options.executor_list,
        "python": platform.python_version(),
        "ansible_core": tool_version(Path(sys.executable), "ansible-core"),
        "pytest": tool_version(Path(sys.executable), "pytest"),
        "pytest_mh_ansible": tool_version(Path(sys.executable), "pytest-mh-ansible"),
        "pytest_mh": tool_version(mh_python, "pytest-mh") if mh_python else None,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": git_commit(options.source) if options.source else git_commit(),
        "bench_commit": git_commit(),
        "source": "--source checkout" if options.source else "this checkout",
        "loadavg_before": list(os.getloadavg()),
        "cpus": os.cpu_count(),
        "default_path": "ours-util (bundled utilities; host.ansible with the warm executor)",
        "modules": {op: MODULES[op] for op in options.op_list},
        "package_undo": PACKAGE_UNDO,
    }
    workdir = Path(tempfile.mkdtemp(prefix="mhcmp-"))
    try:
        log(f"lab {options.lab_name}: up")
        with bench_lab(options.lab_name, reuse=options.reuse) as blab:
            runner = Runner(workdir, blab, mh_python, options.verbose, options.source)
            runner.state = HostState.take(blab)
            result: dict[str, Any] = measure(options, runner, variants, log)
            result["ratios"] = ratios(result["figures"])
            if not options.no_settings and "ours-raw" in variants:
                result["settings"] = measure_settings(options, runner, log)
            config["fingerprint"] = {
                "hosts": list(runner.state.hosts),
                "checks": runner.state.checks,
                "seconds": round(runner.state.seconds, 1),
                "drift": None,  # a drift stops the bench (exit 1, no JSON)
                "what": FINGERPRINT_WHAT,
            }
            log(f"lab {options.lab_name}: down" if not options.reuse else "done")
    except (BenchError, StateDrift) as e:
        print(e, file=sys.stderr)
        return 1
    finally:
        if options.keep:
            print(f"generated suites and output kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    config["duration_s"] = round(time.time() - started, 1)
    config["loadavg_after"] = list(os.getloadavg())
    result = {"config": config, **result}
    print()
    print(
        f"pytest-mh-ansible {config['pytest_mh_ansible']} vs pytest-mh {config['pytest_mh'] or '-'}; "
        f"ansible-core {config['ansible_core']}, pytest {config['pytest']}; {options.rounds} rounds, "
        f"suite of {options.suite_tests} x {options.suite_rounds}; {config['duration_s']} s"
    )
    print_tables(result)
    write_results(result, "compare", started, options.json, keep=not options.no_results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
