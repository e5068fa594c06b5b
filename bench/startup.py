"""Launch -> first test body of the replica suite (tests/compat/replica) under pytest-mh and pytest-mh-ansible.

Both tools run ``pytest --mh-config=<lab>/mhc.yaml --mh-lazy-ssh`` in the suite's directory on the
hosts of one ``lab up --from-mhc`` lab (as bench/replica.py does), with the timing plugin
``bench/startup_timing.py`` loaded by ``-p``: it notes, from the moment just before the process was
started, the wall time and the process's CPU time when collection ended and when the first test body
began. The variants alternate (one order, then the reverse) for ``--rounds`` rounds, after one untimed
collection each (modules compiled, this project's caches filled: the state of every run but a
machine's very first). ``--before DIR`` adds a third variant: this project from another checkout
(``git worktree add DIR COMMIT``), put first on ``PYTHONPATH`` in the same virtualenv. The load
average is recorded with every run: on a shared machine read the CPU figures first.

    python3 bench/startup.py --rounds 5 [--before /tmp/before]

Three scenarios by default (``--scenario`` picks some): the whole suite, where each tool runs its own
first test (pytest-mh sorts tests by topology name, this project keeps the order of first appearance),
and the issue's ``pytest -k one_test``, the same test under both tools: one on a one-host topology and
one on the two-host topology. Each run records which test came first.

The JSON goes to bench/results/startup-<UTC>-<commit>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from compat_suite import PYTEST_MH, ensure_venv
from replica import SUITE, _commit, _environment, replica_lab

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OURS = "pytest-mh-ansible"
PMH = "pytest-mh 1.0.30"
# scenario -> the -k expression (None: the whole suite)
SCENARIOS: dict[str, str | None] = {
    "suite": None,
    "one test, one host": "test_users__wrong_password_is_refused",
    "one test, two hosts": "test_directory__client_conf_names_the_server",
}
FIGURES = ("cpu_s_at_first_test", "first_test_body_s", "collected_s", "cpu_s_at_collected", "wall_s", "load_1min")


def _variant_env(before: Path | None) -> dict[str, str]:
    env = _environment()
    paths = ([str(before)] if before is not None else []) + [str(BENCH)]
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def run_once(
    variant: str,
    python: str,
    before: Path | None,
    mhc: Path,
    work: Path,
    *,
    collect_only: bool = False,
    select: str | None = None,
) -> dict[str, Any]:
    """One run of the suite by ``variant`` (``select``: pytest's ``-k``): the timing plugin's figures, wall time, rc."""
    copy = work / f"suite-{variant.replace(' ', '_')}"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(SUITE, copy, ignore=shutil.ignore_patterns("__pycache__", "artifacts"))
    fd, out = tempfile.mkstemp(prefix="startup-", suffix=".json", dir=work)
    os.close(fd)
    env = _variant_env(before)
    env["STARTUP_TIMING_OUT"] = out
    argv = [python, "-m", "pytest", "-p", "startup_timing", f"--mh-config={mhc}", "--mh-lazy-ssh", "-q", "-rs"]
    if collect_only:
        argv.append("--collect-only")
    if select is not None:
        argv += ["-k", select]
    load = os.getloadavg()[0]
    env["STARTUP_TIMING_T0"] = repr(time.time())
    started = time.monotonic()
    proc = subprocess.run(argv, check=False, cwd=copy, env=env, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - started
    try:
        figures = json.loads(Path(out).read_text() or "{}")
    finally:
        os.unlink(out)
    run: dict[str, Any] = {"variant": variant, "rc": proc.returncode, **figures}
    run["wall_s"] = round(wall, 3)
    run["load_1min"] = round(load, 2)
    if proc.returncode != 0:
        run["output_tail"] = (proc.stdout + proc.stderr)[-2000:]
    return run


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else round((ordered[middle - 1] + ordered[middle]) / 2, 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", type=Path, help="a checkout of an earlier commit, run as a third variant")
    parser.add_argument("--json", type=Path, help="default: bench/results/startup-<date>-<commit>.json")
    parser.add_argument(
        "--scenario", action="append", choices=list(SCENARIOS), help="default: all (repeat to pick several)"
    )
    parser.add_argument("--lab", default="mhstartbench" + os.environ.get("MH_TEST_LAB_SUFFIX", ""))
    args = parser.parse_args()
    commit = _commit()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = args.json or BENCH / "results" / f"startup-{stamp}-{commit}.json"
    variants: dict[str, tuple[str, Path | None]] = {
        PMH: (str(ensure_venv()), None),
        f"{OURS} {commit}": (sys.executable, None),
    }
    if args.before is not None:
        before_commit = subprocess.run(
            ["git", "-C", str(args.before), "rev-parse", "--short=10", "HEAD"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        variants[f"{OURS} {before_commit} (before)"] = (sys.executable, args.before.resolve())
    names = list(variants)
    scenarios = args.scenario or list(SCENARIOS)
    work = Path(tempfile.mkdtemp(prefix=f"{args.lab}-"))
    runs: list[dict[str, Any]] = []
    try:
        with replica_lab(args.lab) as lab:
            for name in names:  # untimed: modules compiled, caches filled
                warm = run_once(name, *variants[name], lab.mhc_path, work, collect_only=True)
                if warm["rc"] != 0:
                    raise RuntimeError(f"{name}: --collect-only failed: {warm.get('output_tail', '')}")
            for n in range(args.rounds):
                for scenario in scenarios:
                    for name in names if n % 2 == 0 else reversed(names):
                        run = run_once(name, *variants[name], lab.mhc_path, work, select=SCENARIOS[scenario])
                        run["round"] = n
                        run["scenario"] = scenario
                        print(json.dumps(run), flush=True)
                        runs.append(run)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # each scenario's runs by each variant, picked once for the medians and the first tests
    picked = {
        scenario: {name: [r for r in runs if r["scenario"] == scenario and r["variant"] == name] for name in names}
        for scenario in scenarios
    }
    medians = {
        scenario: {
            name: {key: _median([r[key] for r in of_variant if key in r]) for key in FIGURES}
            for name, of_variant in by_variant.items()
        }
        for scenario, by_variant in picked.items()
    }
    ratios = {
        scenario: {
            name: {
                key: round(by_variant[name][key] / by_variant[PMH][key], 3)
                for key in ("cpu_s_at_first_test", "first_test_body_s", "wall_s")
                if by_variant[PMH].get(key)
            }
            for name in names
            if name != PMH
        }
        for scenario, by_variant in medians.items()
    }
    first_tests = {
        scenario: {
            name: sorted({r.get("first_test", "") for r in of_variant}) for name, of_variant in by_variant.items()
        }
        for scenario, by_variant in picked.items()
    }
    loads = [r["load_1min"] for r in runs]
    report = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": commit,
        "what": "launch -> first test body of tests/compat/replica (pytest --mh-config=<lab>/mhc.yaml --mh-lazy-ssh, "
        f"no -p) on a 'lab up --from-mhc' lab, {args.rounds} rounds, the variants alternating; scenarios: "
        + "; ".join(f"{k}: " + (f"-k {SCENARIOS[k]}" if SCENARIOS[k] else "the whole suite") for k in scenarios),
        "method": "bench/startup.py with the plugin bench/startup_timing.py (-p): wall time from just before the "
        "process started, CPU time (user+sys, getrusage) of the process; one untimed --collect-only per variant first",
        "versions": {
            "pytest-mh": PYTEST_MH,
            "pytest-mh-ansible": metadata.version("pytest-mh-ansible"),
            "ansible-core": metadata.version("ansible-core"),
            "python": sys.version.split()[0],
        },
        "cpus": os.cpu_count(),
        "load_1min_range": [min(loads, default=0), max(loads, default=0)],
        "all_runs_passed_rc": sorted({r["rc"] for r in runs}),
        "first_tests": first_tests,
        "medians": medians,
        "ratios_to_pytest_mh": ratios,
        "runs": runs,
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=1))
    print(f"written: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
