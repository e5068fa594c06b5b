"""A replica of a pytest-mh suite (tests/compat/replica) under pytest-mh and pytest-mh-ansible, one command line.

The lab comes from the suite's own host file (``pytest-mh-ansible lab up --from-mhc mhc.yaml``: hosts
client.test and server.test), and both tools run ``pytest --mh-config=<the lab's mhc.yaml> --mh-lazy-ssh``
in the suite's directory: pytest-mh 1.0.30 from its own virtualenv, pytest-mh-ansible from this one,
with no ``-p`` (the suite's ``pytest_plugins = ("pytest_mh", ...)`` gets the layer). The tools alternate
for ``--rounds`` rounds after one untimed collection each (both compile their modules once); the JSON
records every outcome per test, each run's wall time, and whether the hosts were as before after it.

    python3 bench/replica.py --rounds 3

tests/integration/compat/test_replica_suite.py uses the same functions for one run of each.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from compat_suite import PYTEST_MH, ensure_venv, outcomes

from pytest_mh_ansible.lab import Lab

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "compat" / "replica"
TOOLS = ("pytest-mh", "pytest-mh-ansible")
FINGERPRINT = (
    "find /etc /root /home -xdev -path /root/.ansible -prune -o -printf '%p %s %m %u\\n' | sort | sha256sum"
    " | cut -c1-16; ls -d /tmp/replica* 2>/dev/null | wc -l"
)

__all__ = ["TOOLS", "fingerprints", "replica_lab", "run_replica"]


@contextmanager
def replica_lab(name: str, directory: Path | None = None) -> Iterator[Lab]:
    """The lab ``lab up --from-mhc`` makes from the suite's mhc.yaml (run as a user would); torn down afterwards."""
    argv = [str(Path(sys.executable).parent / "pytest-mh-ansible"), "lab", "up", "--from-mhc", str(SUITE / "mhc.yaml")]
    argv += ["--name", name] + (["--dir", str(directory)] if directory else [])
    proc = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=600)
    lab_dir = directory
    if lab_dir is None:
        inventory = subprocess.run(
            [*argv[:2], "inventory", "--name", name], check=False, capture_output=True, text=True
        )
        lab_dir = Path(inventory.stdout.strip()).parent
    try:
        if proc.returncode != 0:
            raise RuntimeError(f"lab up --from-mhc failed ({proc.returncode}): {proc.stdout}{proc.stderr}")
        yield Lab.from_directory(lab_dir)
    finally:
        if (lab_dir / "state.json").exists():
            Lab.from_directory(lab_dir).down()


def _environment() -> dict[str, str]:
    """The caller's environment without this project's and pytest's variables; modules compiled once, cached aside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MH_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(os.environ.get("TMPDIR", "/var/tmp")) / "mh-ansible-replica-pycache")
    return env


def run_replica(tool: str, directory: Path, mhc: Path, tag: str = "", *, collect_only: bool = False) -> dict[str, Any]:
    """Run the suite with ``tool``: ``pytest --mh-config=MHC --mh-lazy-ssh`` in a fresh copy of it.

    :returns: The tool, exit code, wall time, outcomes by test and the output's tail.
    """
    work = directory / f"replica-{tool}"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(SUITE, work, ignore=shutil.ignore_patterns("__pycache__", "artifacts"))
    python = str(ensure_venv()) if tool == "pytest-mh" else sys.executable
    junit = directory / f"junit-{tool}{tag}.xml"
    argv = [python, "-m", "pytest", f"--mh-config={mhc}", "--mh-lazy-ssh", f"--junitxml={junit}", "-q", "-rs"]
    if collect_only:
        argv.append("--collect-only")
    started = time.monotonic()
    proc = subprocess.run(argv, check=False, cwd=work, env=_environment(), capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - started
    return {
        "tool": tool,
        "rc": proc.returncode,
        "wall_s": round(wall, 3),
        "outcomes": outcomes(junit) if junit.exists() and not collect_only else {},
        "test_s": _test_times(junit) if junit.exists() and not collect_only else {},
        "output_tail": (proc.stdout + proc.stderr)[-3000:],
    }


def _test_times(junit: Path) -> dict[str, float]:
    """Each test's time (setup, call and teardown) by the names :func:`outcomes` gives, from the junit file."""
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    names = list(outcomes(junit))
    return {name: round(float(case.get("time", 0)), 3) for name, case in zip(names, cases, strict=True)}


def fingerprints(lab: Lab) -> dict[str, str]:
    """A digest of /etc, /root and /home of each host, plus how many /tmp/replica* (backups) are left."""
    return {h.name: lab.run_inside(h.name, FINGERPRINT).stdout.strip().replace("\n", " ") for h in lab.hosts}


def _commit() -> str:
    proc = subprocess.run(
        ["git", "rev-parse", "--short=10", "HEAD"], check=False, cwd=ROOT, capture_output=True, text=True
    )
    return proc.stdout.strip() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="default: bench/results/replica-<date>-<commit>.json")
    parser.add_argument("--lab", default="mhreplbench" + os.environ.get("MH_TEST_LAB_SUFFIX", ""))
    args = parser.parse_args()
    commit = _commit()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = args.json or ROOT / "bench" / "results" / f"replica-{stamp}-{commit}.json"
    work = Path("/var/tmp") / f"{args.lab}-work"
    work.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, Any]] = []
    with replica_lab(args.lab) as lab:
        before = fingerprints(lab)
        for tool in TOOLS:  # untimed: each compiles and caches its modules once
            run_replica(tool, work, lab.mhc_path, collect_only=True)
        for n in range(args.rounds):
            for tool in TOOLS if n % 2 == 0 else reversed(TOOLS):
                load = os.getloadavg()[0]
                run = run_replica(tool, work, lab.mhc_path, tag=f"-{n}")
                run["round"] = n
                run["load_1min_before"] = round(load, 2)
                run["hosts_as_before"] = fingerprints(lab) == before
                print(f"round {n} {tool}: rc={run['rc']} wall={run['wall_s']} s as_before={run['hosts_as_before']}")
                runs.append(run)
    walls = {tool: sorted(r["wall_s"] for r in runs if r["tool"] == tool) for tool in TOOLS}
    medians = {tool: values[len(values) // 2] for tool, values in walls.items()}
    same = all(r["outcomes"] == runs[0]["outcomes"] and r["outcomes"] for r in runs)
    # One test dominates: a refused password costs pytest-mh's libssh about twice what paramiko takes.
    slowest = max(runs[0]["test_s"], key=runs[0]["test_s"].get) if runs and runs[0]["test_s"] else None
    without = {
        tool: sorted(r["wall_s"] - r["test_s"].get(slowest, 0) for r in runs if r["tool"] == tool) for tool in TOOLS
    }
    medians_without = {tool: values[len(values) // 2] for tool, values in without.items()}
    restored = all(r["hosts_as_before"] for r in runs)
    report = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": commit,
        "versions": {
            "pytest-mh": PYTEST_MH,
            "pytest-mh-ansible": metadata.version("pytest-mh-ansible"),
            "ansible-core": metadata.version("ansible-core"),
            "pytest (ours)": metadata.version("pytest"),
            "python": sys.version.split()[0],
        },
        "command": "pytest --mh-config=<lab>/mhc.yaml --mh-lazy-ssh (no -p), in tests/compat/replica",
        "lab": "pytest-mh-ansible lab up --from-mhc tests/compat/replica/mhc.yaml",
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "median_wall_s": medians,
        "ratio_to_pytest_mh": round(medians["pytest-mh-ansible"] / medians["pytest-mh"], 3),
        "slowest_test": slowest,
        "ratio_without_slowest_test": round(medians_without["pytest-mh-ansible"] / medians_without["pytest-mh"], 3),
        "same_outcomes_in_every_run": same,
        "hosts_as_before_after_every_run": restored,
        "tests": len(runs[0]["outcomes"]) if runs else 0,
        "runs": runs,
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=2))
    print(f"written: {target}")
    return 0 if same and restored else 1


if __name__ == "__main__":
    sys.exit(main())
