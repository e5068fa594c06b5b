"""``python -m tests.soak``: run the rollback fault soak on a lab of its own (needs root, like the lab)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from .driver import run_soak
from .plan import PROFILES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="short", help="short (CI) or full (1,000 tests)")
    parser.add_argument("--seed", type=int, default=None, help="the plan's seed (default: the profile's)")
    parser.add_argument("--tests", type=int, default=None, help="number of tests (default: the profile's)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this JSON file")
    parser.add_argument("--workdir", type=Path, default=None, help="lab and suite directory (default: a temp dir)")
    parser.add_argument(
        "--lab-name",
        default=None,
        help="the lab's name (default: mhsoak + MH_TEST_LAB_SUFFIX, which CI sets per run, and its clean-up takes)",
    )
    parser.add_argument("--keep-lab", action="store_true", help="leave the lab up afterwards (lab down --name mhsoak)")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments for the suite's runs (after --)")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mhsoak-"))
    result = run_soak(
        args.profile,
        workdir,
        seed=args.seed,
        tests=args.tests,
        json_path=args.json,
        keep_lab=args.keep_lab,
        name=args.lab_name,
        pytest_args=tuple(args.pytest_args),
    )
    clean = (
        not result.get("drift_reports")
        and not result.get("hosts_not_restored")
        and not result.get("tool_traces_left")
        and not result.get("faults_missing")
        and not result.get("unexpected_failures")
        and not result.get("not_reverted_rollback_failed")
        and result.get("tests_run") == result.get("tests")
    )
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
