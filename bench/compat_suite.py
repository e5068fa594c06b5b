"""The pytest-mh-style suite of tests/compat/suite under pytest-mh and under pytest-mh-ansible's compat layer.

Both tools run the same suite, unchanged, on the same lab hosts: pytest-mh 1.0.30 (its own virtualenv)
with ``mhc.yaml``, pytest-mh-ansible with the inventory ``convert-mhc`` made from that file. The
variants alternate for ``--rounds`` rounds; the JSON records every outcome per test, the wall time
of every run and whether the hosts were as before after each run.

    python3 bench/compat_suite.py --rounds 3 --json bench/results/compat-suite.json

tests/integration/compat/test_compat_suite.py uses the same functions for one round of each.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "compat" / "suite"
VENV = Path(__file__).resolve().parent / ".venv-pytest-mh"
PYTEST_MH = "pytest-mh==1.0.30"
# pytest-mh 1.0.30 loses topology names from node ids on pytest 9 (docs/migrating-from-pytest-mh.md).
PYTEST_FOR_PYTEST_MH = "pytest>=8.4,<9"
HOSTS = {"client1": "client", "server1": "server"}
# variant -> the inventory it uses (pytest-mh reads mhc.yaml and ignores it)
VARIANTS = {"pytest-mh": "ssh", "ours-ssh": "ssh", "ours-paramiko": "paramiko"}
# every entry of /etc and /root as "path size mode owner", sorted: what the fingerprint digests
LISTING = "find /etc /root -xdev -path /root/.ansible -prune -o -printf '%p %s %m %u\\n' | sort"
FINGERPRINT = LISTING + " | sha256sum | cut -c1-16; ls -d /tmp/mhcompat* 2>/dev/null | wc -l"

__all__ = ["bench_lock", "compat_lab", "ensure_venv", "fingerprints", "outcomes", "run_suite", "write_configs"]


def ensure_venv() -> Path:
    """The python of ``bench/.venv-pytest-mh`` with pytest-mh 1.0.30 (and pytest 8), made if needed.

    Two tests (each on its xdist worker) may ask for it at once: the first makes it under a lock, the
    other waits and finds it made.
    """
    with bench_lock():
        return _ensure_venv()


@contextmanager
def bench_lock() -> Iterator[None]:
    """Held while a virtualenv under ``bench/`` is checked or made, by any process of this machine.

    Locks the bench directory itself (no lock file left behind): xdist workers that need the same
    virtualenv at once make it one after the other, the later one finding it made.
    """
    lock = os.open(VENV.parent, os.O_RDONLY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
    finally:
        os.close(lock)


def _ensure_venv() -> Path:
    python = VENV / "bin" / "python"
    probe = "import pytest_mh, pytest, importlib.metadata as m; assert m.version('pytest-mh') == '1.0.30'; " + (
        "assert pytest.__version__.startswith('8.')"
    )
    if (
        python.exists()
        and subprocess.run([str(python), "-I", "-c", probe], check=False, capture_output=True).returncode == 0
    ):
        return python
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", PYTEST_MH, PYTEST_FOR_PYTEST_MH], check=True)
    return python


@contextmanager
def compat_lab(name: str, directory: Path | None = None) -> Iterator[Lab]:
    """Two sysv hosts (client1, server1) with ``expect`` installed on client1; torn down afterwards."""
    spec = LabSpec(
        name=name,
        hosts=tuple(LabHostSpec(host, roles=(role,)) for host, role in HOSTS.items()),
        packages=("expect",),
    )
    with Lab(spec, directory) as lab:
        result = lab.run_inside("client1", "DEBIAN_FRONTEND=noninteractive apt-get install -y -q expect", timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"installing expect on client1 failed: {result.stderr[-2000:]}")
        yield lab


def write_configs(lab: Lab, directory: Path) -> tuple[Path, dict[str, Path]]:
    """``mhc.yaml`` for pytest-mh, and the inventories ``convert-mhc`` makes from it, by ssh plugin.

    :returns: The mhc path, and ``{"ssh": hosts.yml, "paramiko": hosts-paramiko.yml}``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    addresses = {h.name: h.address for h in lab.hosts}
    mhc = {
        "domains": [
            {
                "id": "test",
                "hosts": [
                    {
                        "hostname": name,
                        "role": role,
                        "conn": {
                            "type": "ssh",
                            "host": addresses[name],
                            "username": "root",
                            "private_key": str(lab.key_path),
                        },
                    }
                    for name, role in HOSTS.items()
                ],
            }
        ]
    }
    mhc_path = directory / "mhc.yaml"
    mhc_path.write_text(yaml.safe_dump(mhc, sort_keys=False))
    cli = Path(sys.executable).parent / "pytest-mh-ansible"
    inventories: dict[str, Path] = {}
    for plugin in ("ssh", "paramiko"):
        inventory = inventories[plugin] = directory / ("hosts.yml" if plugin == "ssh" else f"hosts-{plugin}.yml")
        subprocess.run(
            [str(cli), "convert-mhc", str(mhc_path), "-o", str(inventory), "--no-host-key-checking",
             "--ssh-plugin", plugin],
            check=True,
            capture_output=True,
            text=True,
        )  # fmt: skip
    return mhc_path, inventories


def _suite_copy(directory: Path) -> Path:
    work = directory / "suite"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(SUITE, work, ignore=shutil.ignore_patterns("__pycache__", "artifacts"))
    return work


def run_suite(tool: str, directory: Path, mhc: Path, inventory: Path, tag: str = "") -> dict[str, Any]:
    """Run the suite with ``tool`` (``pytest-mh``, else ours with ``inventory``); outcomes, wall time, exit code."""
    work = _suite_copy(directory)
    junit = directory / f"junit-{tool}{tag}.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MH_"))}
    if tool == "pytest-mh":
        argv = [str(ensure_venv()), "-m", "pytest", f"--mh-config={mhc}"]
    else:
        argv = [sys.executable, "-m", "pytest", "-p", "pytest_mh_ansible.compat.plugin", f"--mh-inventory={inventory}"]
    argv += [f"--junitxml={junit}", "-q", "-rs"]
    started = time.monotonic()
    proc = subprocess.run(argv, check=False, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - started
    return {
        "tool": tool,
        "rc": proc.returncode,
        "wall_s": round(wall, 3),
        "outcomes": outcomes(junit) if junit.exists() else {},
        "output_tail": (proc.stdout + proc.stderr)[-3000:],
    }


def outcomes(junit: Path) -> dict[str, str]:
    """``{file::test[topology]: passed|failed|error|skipped}`` from a junit file (pytest-mh's ids normalised)."""
    result: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = re.sub(r" \(([^)]*)\)$", r"[\1]", case.get("name", ""))
        key = f"{case.get('classname', '').rpartition('.')[2]}::{name}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                if outcome in {"error", "failed"}:
                    break
        result[key] = outcome
    return result


def fingerprints(lab: Lab, hosts: Iterable[str] = tuple(HOSTS)) -> dict[str, str]:
    """A digest of /etc and /root of each of ``hosts`` (this suite's by default), plus how many /tmp/mhcompat*
    are left (bench/compare.py checks its three hosts with it)."""
    return {name: lab.run_inside(name, FINGERPRINT).stdout.strip().replace("\n", " ") for name in hosts}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "compat-suite.json")
    parser.add_argument("--lab", default="mhcompatbench" + os.environ.get("MH_TEST_LAB_SUFFIX", ""))
    args = parser.parse_args()
    work = Path("/tmp") / f"{args.lab}-work"
    runs: list[dict[str, Any]] = []
    with compat_lab(args.lab) as lab:
        mhc, inventories = write_configs(lab, work)
        before = fingerprints(lab)
        for n in range(args.rounds):
            order = list(VARIANTS) if n % 2 == 0 else list(reversed(VARIANTS))
            for tool in order:
                run = run_suite(tool, work, mhc, inventories[VARIANTS[tool]], tag=f"-{n}")
                run["round"] = n
                run["hosts_as_before"] = fingerprints(lab) == before
                print(f"round {n} {tool}: rc={run['rc']} wall={run['wall_s']} s as_before={run['hosts_as_before']}")
                runs.append(run)
    walls = {tool: sorted(r["wall_s"] for r in runs if r["tool"] == tool) for tool in VARIANTS}
    medians = {tool: values[len(values) // 2] for tool, values in walls.items()}
    same = all(r["outcomes"] == runs[0]["outcomes"] for r in runs)
    report = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "pytest_mh": PYTEST_MH,
        "load_average": os.getloadavg(),
        "median_wall_s": medians,
        "ratio_to_pytest_mh": {
            tool: round(medians[tool] / medians["pytest-mh"], 3) for tool in VARIANTS if tool != "pytest-mh"
        },
        "variants": {"pytest-mh": "mhc.yaml (libssh)", "ours-ssh": "hosts.yml", "ours-paramiko": "hosts-paramiko.yml"},
        "same_outcomes_in_every_run": same,
        "runs": runs,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=2))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
