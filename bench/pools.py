"""Host pools (issue #16): this project with ``-n 3`` on 3 host sets, against pytest-mh and itself serially.

Brings up one systemd lab of 9 hosts, three sets of client + 2 servers (``clientK``, ``serverKa``,
``serverKb``, K = 1..3), prepared as compare.py's lab (``blsvc.service``, ``/etc/bl-app.conf``), and
runs compare.py's suite (``suite_tests``: client + 2 servers; a file write, a restart or a useradd, two
commands, each change rolled back) in four variants, alternating their order every round:

* ``pytest-mh-eager`` and ``pytest-mh``: pytest-mh 1.0.30 (eager, its default, and lazy) serially on
  one set (an ``mhc.yaml`` of client1, server1a, server1b); the ratios take the better median of the two;
* ``ours-serial``: this project serially (no ``-n``) on the 9-host inventory (it uses one set);
* ``ours-n3``: this project with ``-n 3`` on the 9-host inventory: the pool scheduler gives each
  xdist worker its own client and 2 servers (docs/parallel.md, "Pools"; no ``mh_pool``).

Our two variants use the bundled utilities (compare.py's ``ours-util``, the product's default path).
Figures: wall time per run (process start to end), medians over the rounds, and the ratios
``ours-n3 / best pytest-mh`` (target 0.40) and ``ours-n3 / ours-serial`` (target 0.45). Every ours-n3
run is checked: every test passed, which worker ran which tests on which hosts, and that no host was in
two tests of different workers at the same time.

Usage (root: it brings up a lab)::

    .venv/bin/python bench/pools.py                                   # 200 tests, 3 rounds
    .venv/bin/python bench/pools.py --suite-tests 12 --rounds 1 --lab-name mhpoolsmoke

See bench/README.md, "Host pools", for more.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare import BenchError, Runner, alternate, git_commit, write_results
from compare_lab import bench_lab, ensure_pytest_mh_venv, tool_version, write_inventories
from compare_suites import PYTEST_MH_VARIANTS, VARIANTS, suite_tests, write_variant

SETS = 3
WORKERS = 3
TARGETS = {"ours_n3_to_best_pytest_mh": 0.40, "ours_n3_to_ours_serial": 0.45}

# name -> role: set K is clientK, serverKa, serverKb
LAB_HOSTS: dict[str, str] = {}
for _k in range(1, SETS + 1):
    LAB_HOSTS.update({f"client{_k}": "client", f"server{_k}a": "server", f"server{_k}b": "server"})
# pytest-mh's one set
MH_HOSTS: dict[str, str] = {"client1": "client", "server1a": "server", "server1b": "server"}

# variant -> (compare_suites variant whose conftest it runs, extra pytest arguments)
POOL_VARIANTS: dict[str, tuple[str, list[str]]] = {
    "pytest-mh-eager": ("pytest-mh-eager", []),
    "pytest-mh": ("pytest-mh", []),
    "ours-serial": ("ours-util", []),
    "ours-n3": ("ours-util", ["-n", str(WORKERS), "-p", "bench_pools"]),
}
LABELS = {
    "pytest-mh-eager": f"{VARIANTS['pytest-mh-eager']}, serial, 1 set",
    "pytest-mh": f"{VARIANTS['pytest-mh']}, serial, 1 set",
    "ours-serial": "ours (utilities), serial",
    "ours-n3": f"ours (utilities), -n {WORKERS}",
}

POOLS_PLUGIN = '''\
"""Which hosts each test used, in which xdist worker and when (loaded with -p bench_pools).

Writes $BENCH_OUT.pools.<worker> at the end of the worker's session.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest

TESTS: dict[str, dict[str, Any]] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Any:
    start = time.time()
    yield
    TESTS.setdefault(item.nodeid, {}).update(start=start, end=time.time())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    hosts = set()
    for value in getattr(item, "funcargs", {}).values():
        name = getattr(getattr(value, "host", None), "hostname", None)
        if isinstance(name, str):
            hosts.add(name)
    TESTS.setdefault(item.nodeid, {})["hosts"] = sorted(hosts)
    yield


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(f"{os.environ['BENCH_OUT']}.pools.{worker}", "w") as f:
        json.dump({"worker": worker, "tests": TESTS}, f)
'''


def host_use(out: Path) -> dict[str, Any]:
    """From an ours-n3 run's ``bench_pools`` files: tests and hosts per worker, and host overlaps.

    An overlap is a host in two tests of different workers whose setup..teardown spans intersect.
    """
    tests: list[tuple[str, str, dict[str, Any]]] = []
    for path in sorted(out.parent.glob(out.name + ".pools.*")):
        data = json.loads(path.read_text())
        tests += [(data["worker"], nodeid, t) for nodeid, t in data["tests"].items()]
        path.unlink()
    workers: dict[str, dict[str, Any]] = {}
    spans: dict[str, list[tuple[float, float, str]]] = {}
    for worker, _nodeid, t in tests:
        entry = workers.setdefault(worker, {"tests": 0, "hosts": set()})
        entry["tests"] += 1
        entry["hosts"].update(t.get("hosts", []))
        for host in t.get("hosts", []):
            spans.setdefault(host, []).append((t["start"], t["end"], worker))
    overlaps = []
    for host, items in spans.items():
        items.sort()
        for i, (_start, end, worker) in enumerate(items):
            for start2, _end2, worker2 in items[i + 1 :]:
                if start2 >= end:
                    break
                if worker2 != worker:
                    overlaps.append({"host": host, "workers": sorted({worker, worker2})})
    return {
        "workers": {w: {"tests": e["tests"], "hosts": sorted(e["hosts"])} for w, e in sorted(workers.items())},
        "host_overlaps": len(overlaps),
        "overlap_examples": overlaps[:5],
    }


def warm_log(out: Path) -> dict[str, Any]:
    """Agent starts, payloads served warm and fallbacks, summed over the run's processes (the workers' files)."""
    total: dict[str, Any] = {"agent_starts": 0, "served": 0, "fallbacks": 0}
    paths = [out, *sorted(p for p in out.parent.glob(out.name + ".gw*"))]
    for path in paths:
        if not path.exists():
            continue
        warm = json.loads(path.read_text()).get("warm") or {}
        total["agent_starts"] += len(warm.get("agent_starts_ms", []))
        total["served"] += warm.get("served", 0)
        total["fallbacks"] += sum((warm.get("fallbacks") or {}).values())
    return total


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, all cpus (``/proc/stat``); idle and iowait are not busy."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guest is in user)
    return total - fields[3] - fields[4], total


def run_suite(runner: Runner, variant: str, tests: int) -> dict[str, Any]:
    """One run of the suite of ``tests`` tests under ``variant``; every test must pass (Runner checks).

    ``span_s``: first test's start to last test's finish; ``cpu_busy``: the share of the machine's cpus
    busy during the run (everything on it: pytest, its workers, the lab hosts' processes, other work).
    """
    extra = POOL_VARIANTS[variant][1]
    busy0, total0 = cpu_times()
    data = runner.run(variant, "suite", suite_tests(tests), inventory="pools", extra_args=extra)
    busy1, total1 = cpu_times()
    passed = sum(1 for outcome in data["outcomes"].values() if outcome == "passed")
    if passed != tests:
        raise BenchError(f"{variant}: {passed} of {tests} tests passed: {data['outcomes']}")
    starts = [t["start"] for t in data["tests"].values()]
    finishes = [t["finish"] for t in data["tests"].values()]
    sample: dict[str, Any] = {
        "wall_s": data["wall"],
        "span_s": max(finishes) - min(starts),
        "cpu_busy": (busy1 - busy0) / max(1, total1 - total0),
        "passed": passed,
    }
    out = Path(data["out"])
    if variant.startswith("ours"):
        sample["warm"] = warm_log(out)
    if variant == "ours-n3":
        sample.update(host_use(out))
        if sample["host_overlaps"]:
            raise BenchError(f"{variant}: hosts used by two workers at once: {sample['overlap_examples']}")
    return sample


def describe(sample: dict[str, Any]) -> str:
    text = f"{sample['wall_s']:6.1f} s (tests {sample['span_s']:.1f} s, machine cpu busy {sample['cpu_busy']:.0%}"
    text += f"; {sample['passed']} passed"
    if "workers" in sample:
        parts = [f"{w} {e['tests']} on {','.join(e['hosts'])}" for w, e in sample["workers"].items()]
        text += f"; {'; '.join(parts)}; host overlaps {sample['host_overlaps']}"
    return text + ")"


def measure(
    options: argparse.Namespace, runner: Runner, variants: list[str], log: Callable[[str], None]
) -> dict[str, Any]:
    warmup: dict[str, dict[str, Any]] = {}
    if options.warmup_tests:
        log(f"warm-up (not counted): {options.warmup_tests} tests per variant")
        for v in variants:
            warmup[v] = run_suite(runner, v, options.warmup_tests)
            log(f"  {v:16s} {describe(warmup[v])}")
    samples: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for r in range(options.rounds):
        log(f"round {r + 1}/{options.rounds}: suite of {options.suite_tests} tests")
        for position, v in enumerate(alternate(variants, r)):
            sample = run_suite(runner, v, options.suite_tests)
            sample.update(round=r + 1, position=position)
            samples[v].append(sample)
            log(f"  {v:16s} {describe(sample)}")
    medians = {v: statistics.median(s["wall_s"] for s in samples[v]) for v in variants}
    result: dict[str, Any] = {"medians_s": medians, "ratios": {}, "samples": samples, "warmup": warmup}
    mh = [v for v in PYTEST_MH_VARIANTS if v in medians]
    n3 = medians.get("ours-n3")
    if mh:
        best = min(mh, key=lambda v: medians[v])
        result["best_pytest_mh"] = {"variant": best, "median_s": medians[best]}
        if n3 is not None:
            result["ratios"]["ours_n3_to_best_pytest_mh"] = n3 / medians[best]
        if "ours-serial" in medians:
            result["ratios"]["ours_serial_to_best_pytest_mh"] = medians["ours-serial"] / medians[best]
    if n3 is not None and "ours-serial" in medians:
        result["ratios"]["ours_n3_to_ours_serial"] = n3 / medians["ours-serial"]
    result["targets"] = {k: v for k, v in TARGETS.items() if k in result["ratios"]}
    result["targets_met"] = {k: result["ratios"][k] <= v for k, v in result["targets"].items()}
    result["all_passed"] = True  # run_suite stops the bench at the first test that did not pass
    result["host_overlaps"] = sum(s.get("host_overlaps", 0) for s in samples.get("ours-n3", []))
    return result


def print_summary(result: dict[str, Any], variants: list[str]) -> None:
    print()
    width = max(len(LABELS[v]) for v in variants)
    print(f"{'variant'.ljust(width)}  median    samples")
    for v in variants:
        walls = ", ".join(f"{s['wall_s']:.1f}" for s in result["samples"][v])
        print(f"{LABELS[v].ljust(width)}  {result['medians_s'][v]:6.1f} s  {walls}")
    if "best_pytest_mh" in result:
        print(f"better pytest-mh mode: {LABELS[result['best_pytest_mh']['variant']]}")
    for key, value in result["ratios"].items():
        target = result["targets"].get(key)
        note = f" (target <= {target:.2f}: {'met' if value <= target else 'NOT met'})" if target is not None else ""
        print(f"{key.replace('_', ' ')}: {value:.3f}{note}")
    if "ours-n3" in variants:
        print(f"ours-n3: every test passed; hosts used by two workers at once: {result['host_overlaps']}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite-tests", type=int, default=200, help="tests of the suite (200)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of the suite per variant (3)")
    parser.add_argument(
        "--warmup-tests", type=int, default=3, help="an uncounted first run of this many tests per variant (3; 0: none)"
    )
    parser.add_argument("--tools", default="ours,pytest-mh", help="comma list of ours, pytest-mh (both)")
    parser.add_argument("--lab-name", default="mhpools", help="lab name (mhpools)")
    parser.add_argument("--reuse", action="store_true", help="reuse the lab if it is up, and leave it up")
    parser.add_argument("--keep-lab", action="store_true", help="leave the lab up at the end")
    parser.add_argument("--keep", action="store_true", help="keep the generated suites and their output")
    parser.add_argument("--json", metavar="FILE", help="also write the JSON here")
    parser.add_argument("--no-results", action="store_true", help="do not write the JSON to bench/results/")
    parser.add_argument("-v", "--verbose", action="store_true", help="log each pytest command")
    options = parser.parse_args(argv)
    tools = {t.strip() for t in options.tools.split(",") if t.strip()}
    if not tools or tools - {"ours", "pytest-mh"}:
        parser.error("--tools takes a comma list of: ours, pytest-mh")
    options.tool_set = tools
    if min(options.suite_tests, options.rounds) < 1 or options.warmup_tests < 0:
        parser.error("--suite-tests and --rounds must be at least 1, --warmup-tests at least 0")
    return options


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # the lab's teardown runs as on Ctrl-C


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    if os.geteuid() != 0:
        print("pools.py brings up a lab and needs root", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    started = time.time()

    def log(message: str) -> None:
        print(f"[{time.time() - started:6.1f} s] {message}", flush=True)

    variants: list[str] = []
    mh_python: Path | None = None
    if "pytest-mh" in options.tool_set:
        mh_python = ensure_pytest_mh_venv(log)
        variants += list(PYTEST_MH_VARIANTS)
    if "ours" in options.tool_set:
        variants += ["ours-serial", "ours-n3"]
    python = Path(sys.executable)
    config: dict[str, Any] = {
        "suite_tests": options.suite_tests,
        "rounds": options.rounds,
        "warmup_tests": options.warmup_tests,
        "sets": SETS,
        "workers": WORKERS,
        "lab_hosts": LAB_HOSTS,
        "pytest_mh_hosts": MH_HOSTS,
        "variants": {
            v: {"label": LABELS[v], "suite": POOL_VARIANTS[v][0], "args": POOL_VARIANTS[v][1]} for v in variants
        },
        "targets": TARGETS,
        "python": platform.python_version(),
        "ansible_core": tool_version(python, "ansible-core"),
        "pytest": tool_version(python, "pytest"),
        "pytest_xdist": tool_version(python, "pytest-xdist"),
        "pytest_mh_ansible": tool_version(python, "pytest-mh-ansible"),
        "pytest_mh": tool_version(mh_python, "pytest-mh") if mh_python else None,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "commit": git_commit(),
        "loadavg_before": list(os.getloadavg()),
        "cpus": os.cpu_count(),
        "lab_name": options.lab_name,
    }
    workdir = Path(tempfile.mkdtemp(prefix="mhpools-"))
    try:
        log(f"lab {options.lab_name}: up ({len(LAB_HOSTS)} systemd hosts)")
        with bench_lab(
            options.lab_name, reuse=options.reuse, keep=options.keep_lab, hosts=LAB_HOSTS, cache_package=False
        ) as blab:
            log("lab ready")
            runner = Runner(workdir, blab, mh_python, options.verbose)
            for v in variants:  # our variants run compare.py's ours-util suite; the n3 one with bench_pools
                runner.dirs[v] = write_variant(workdir / v, POOL_VARIANTS[v][0])
                (runner.dirs[v] / "bench_pools.py").write_text(POOLS_PLUGIN)
            runner.inventories["pools"] = write_inventories(blab, workdir / "inventories", mh_hosts=MH_HOSTS)
            result = measure(options, runner, variants, log)
            log(f"lab {options.lab_name}: down" if not (options.reuse or options.keep_lab) else "done")
    except BenchError as e:
        print(e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; the lab was brought down", file=sys.stderr)
        return 130
    finally:
        if options.keep:
            print(f"generated suites and output kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    config["duration_s"] = round(time.time() - started, 1)
    config["loadavg_after"] = list(os.getloadavg())
    result = {"config": config, **result}
    print(
        f"\npytest-mh-ansible {config['pytest_mh_ansible']} (pytest-xdist {config['pytest_xdist']}) vs pytest-mh "
        f"{config['pytest_mh'] or '-'}; ansible-core {config['ansible_core']}, pytest {config['pytest']}; "
        f"{options.rounds} rounds of {options.suite_tests} tests; {config['duration_s']} s; "
        f"load {config['loadavg_before'][0]:.2f} -> {config['loadavg_after'][0]:.2f} on {config['cpus']} cpus"
    )
    print_summary(result, variants)
    write_results(result, "pools", started, options.json, keep=not options.no_results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
