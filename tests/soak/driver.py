"""The soak driver: a lab, a generated suite, pytest runs with faults until every test ran, fingerprints.

``run_soak()`` does it all and returns the figures (also written as JSON); ``python -m tests.soak``
is its command line, and ``tests/soak/test_soak_short.py`` runs the short profile as a test.

1. The lab: ``sysv1`` and ``sysv2`` (sysv) and ``sysd1`` (systemd), with nftables and tree in the
   lab's package cache and a non-root user ``labuser``.
2. Preparation over plain ssh: nftables installed, two demo services per host (``mhsoak-on`` running
   and enabled, ``mhsoak-off`` stopped and disabled). Then each host's fingerprint.
3. The suite (``plan.json``, ``test_soak.py``, ``conftest.py``, ``pytest.ini``) in the work directory.
4. pytest runs with ``--mh-verify-rollback``. When a test with a signal fault says it is ready, the
   driver sends it the signal; the run ends interrupted, and the next run takes the tests that have
   not started yet (``run.json``), until none is left.
5. Each host's fingerprint again, compared with the first; the lab goes down.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

import pytest_mh_ansible
from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec, LabUserSpec, dummy_init_script

from .fingerprint import SshTarget, difference, fingerprint, machine_paths, shown_through, traces
from .plan import FAULTS, HOSTS, PROFILES, SIGNAL_FAULTS, make_plan
from .states import STATE_DIR, STATE_PACKAGES, SYSV_SERVICE, prepare_script

HERE = Path(__file__).parent
SIGNUMS = {"sigint": signal.SIGINT, "sigterm": signal.SIGTERM, "sighup": signal.SIGHUP}
# Messages of the generated suite and of the product that tell a scheduled fault happened.
EXPECTED_FAILURE = {
    "fail_body": ("call", "mhsoak: scheduled failure of"),
    "fail_setup": ("setup", "mhsoak: scheduled setup failure of"),
    "timeout_test": ("call", "(mh_timeout); the test was stopped"),
}
OBSERVED_IN_TEST = ("sshd_restart", "timeout_call", "full_tmp")
PYTEST_INI = """\
[pytest]
addopts = -p no:cacheprovider -p no:randomly -p no:xdist
# The drift check hashes these paths before and after each test (its default adds /var/lib: slower,
# and the fingerprint covers the packages anyway).
mh_verify_paths =
    /etc
    /home
    /root
mh_unreverted = warn
"""
SYSV_PREP = """
set -e
cd /var/cache/apt/archives && dpkg -i libnftnl11_*.deb libnftables1_*.deb nftables_*.deb >/dev/null \\
  || apt-get install -y -q nftables >/dev/null
cat > /etc/init.d/mhsoak-on <<'EOF'
{on}EOF
cat > /etc/init.d/mhsoak-off <<'EOF'
{off}EOF
chmod 0755 /etc/init.d/mhsoak-on /etc/init.d/mhsoak-off
update-rc.d mhsoak-on defaults >/dev/null
service mhsoak-on start
"""
SYSTEMD_PREP = """
set -e
cd /var/cache/apt/archives && dpkg -i libnftnl11_*.deb libnftables1_*.deb nftables_*.deb >/dev/null \\
  || apt-get install -y -q nftables >/dev/null
for name in mhsoak-on mhsoak-off; do
  printf '[Service]\\nExecStart=/bin/sleep infinity\\nExecReload=/bin/true\\n' > /etc/systemd/system/$name.service
  printf '[Install]\\nWantedBy=multi-user.target\\n' >> /etc/systemd/system/$name.service
done
systemctl daemon-reload
systemctl enable --now mhsoak-on.service 2>/dev/null
# apt's hook (/etc/apt/apt.conf.d/20packagekit) starts packagekit, and with it polkit, over D-Bus on
# every package install; they keep running after the package is removed, and the drift check reports
# them (it did, in the full profile). Not the journal's to undo: masked here, said in docs/soak.md.
if systemctl cat packagekit.service >/dev/null 2>&1; then systemctl mask packagekit.service >/dev/null 2>&1; fi
"""


def _source() -> dict[str, Any]:
    """Which code the soak runs: the checkout's commit and its changed files (the product's and the soak's)."""
    root = Path(pytest_mh_ansible.__file__).parent.parent
    git = ["git", "-C", str(root)]
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=False).stdout.strip()
    status = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True, check=False).stdout
    return {"checkout": str(root), "commit": commit, "uncommitted": [line[3:] for line in status.splitlines()]}


def lab_name() -> str:
    """``mhsoak`` plus ``MH_TEST_LAB_SUFFIX`` and the xdist worker (as tests/integration/labname.py)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "").removeprefix("gw")
    return "mhsoak" + os.environ.get("MH_TEST_LAB_SUFFIX", "") + (f"-{worker}" if worker else "")


def _targets(lab: Lab) -> dict[str, SshTarget]:
    hosts = yaml.safe_load(lab.inventory_path.read_text())["all"]["hosts"]
    inits = dict(HOSTS)
    return {
        name: SshTarget(name, str(hosts[name]["ansible_host"]), lab.key_path, lab.known_hosts_path, inits[name])
        for name in inits
    }


def _prepare(target: SshTarget) -> None:
    if target.init == "systemd":
        script = SYSTEMD_PREP
    else:
        script = SYSV_PREP.format(on=dummy_init_script("mhsoak-on"), off=dummy_init_script("mhsoak-off"))
    script += prepare_script(target.init, dummy_init_script(SYSV_SERVICE))  # the objects in unusual states
    done = target.ssh(script, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"soak: preparing {target.name} failed (rc {done.returncode}): {done.stderr[-1000:]}")


def _limit(lines: list[str], limit: int = 40) -> list[str]:
    return lines if len(lines) <= limit else [*lines[:limit], f"... and {len(lines) - limit} more"]


def _unlock(lab: Lab) -> None:
    """Clear the immutable file's attribute: the lab could not remove it with the host's upper directory."""
    try:
        for target in _targets(lab).values():
            target.ssh(f"chattr -i {STATE_DIR}/immutable.conf 2>/dev/null", timeout=30)
    except (OSError, KeyError, subprocess.SubprocessError):  # no lab, or a host that does not answer
        pass


def _write_suite(suite: Path, plan: dict[str, Any]) -> None:
    suite.mkdir(parents=True, exist_ok=True)
    (suite / "plan.json").write_text(json.dumps(plan, indent=1))
    (suite / "pytest.ini").write_text(PYTEST_INI)
    (suite / "conftest.py").write_text((HERE / "suite_conftest.py").read_text())
    lines = [
        '"""Generated by tests/soak/driver.py from plan.json: one test per planned test."""',
        "import pytest",
        "from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark",
        "",
        "T = {",
        *(
            f"    {name!r}: TopologyMark({name!r}, Topology(TopologyDomain('default', {name}=1)), "
            f"fixtures=dict(target='default.{name}[0]')),"
            for name, _ in HOSTS
        ),
        "}",
    ]
    for test in plan["tests"]:
        lines += ["", ""]
        if test["fault"] == "timeout_test":
            lines.append("@pytest.mark.mh_timeout(4)")
        lines += [
            f"@pytest.mark.topology(T[{test['host']!r}])",
            f"def {test['name']}(target, soak):",
            f"    soak.body({test['index']}, target)",
        ]
    (suite / "test_soak.py").write_text("\n".join(lines) + "\n")


def _read_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class _Run:
    """One pytest run of the suite over the tests in ``todo``; sends the scheduled signal when a test is ready."""

    def __init__(
        self, number: int, suite: Path, lab: Lab, plan: dict[str, Any], todo: set[int], *, limit: float
    ) -> None:
        self.number, self.suite, self.lab, self.plan, self.todo, self.limit = number, suite, lab, plan, todo, limit
        self.log = suite / f"run-{number}.log"
        self.signal: dict[str, Any] | None = None

    def go(self, pytest_args: list[str]) -> dict[str, Any]:
        ready = self.suite / "signal-ready"
        ready.unlink(missing_ok=True)
        run = {"todo": sorted(self.todo), "events": str(self.suite / "events.jsonl"), "ready": str(ready)}
        (self.suite / "run.json").write_text(json.dumps(run))
        argv = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rfE",
            f"--mh-inventory={self.lab.inventory_path}",
            "--mh-verify-rollback",
            *pytest_args,
        ]
        started = time.monotonic()
        with self.log.open("w") as out:
            # (not as an xdist worker, even when the short profile's test runs in one)
            env = {
                key: value
                for key, value in os.environ.items()
                if not key.startswith("PYTEST_XDIST") and key != "PYTEST_CURRENT_TEST"
            }
            proc = subprocess.Popen(argv, cwd=self.suite, stdout=out, stderr=subprocess.STDOUT, env=env)
            while proc.poll() is None:
                if self.signal is None and ready.exists():
                    index = int(ready.read_text() or -1)
                    fault = self.plan["tests"][index]["fault"]
                    proc.send_signal(SIGNUMS[fault])
                    self.signal = {"index": index, "fault": fault, "sent_after_s": round(time.monotonic() - started, 2)}
                if time.monotonic() - started > self.limit:
                    proc.kill()
                    proc.wait()
                    raise RuntimeError(f"soak: pytest run {self.number} took over {self.limit:.0f} s; see {self.log}")
                time.sleep(0.05)
        output = self.log.read_text()
        return {
            "run": self.number,
            "rc": proc.returncode,
            "tests_to_run": len(self.todo),
            "wall_s": round(time.monotonic() - started, 2),
            "signal": self.signal,
            "output_tail": output[-4000:],
            "output": output,
        }


def _outcomes(events: list[dict[str, Any]]) -> dict[int, dict[str, dict[str, Any]]]:
    reports: dict[int, dict[str, dict[str, Any]]] = collections.defaultdict(dict)
    for item in events:
        if item["kind"] == "report" and item["index"] is not None:
            reports[item["index"]][item["when"]] = item
    return reports


def _check_tests(
    plan: dict[str, Any], events: list[dict[str, Any]], runs: list[dict[str, Any]]
) -> tuple[dict[str, int], list[dict[str, Any]], list[dict[str, Any]]]:
    """Which scheduled faults happened, and which tests ended otherwise than planned."""
    reports = _outcomes(events)
    seen = {(e["index"], e["fault"]) for e in events if e["kind"] == "fault" and e.get("observed")}
    # A signal happened when the product said it received it during that test; the run must then
    # end as interrupted (exit status 2), whatever else went wrong in it.
    signalled = {
        run["signal"]["index"]: run
        for run in runs
        if run["signal"] is not None
        and f"pytest-mh-ansible: {run['signal']['fault'].upper()} received during" in run["output"]
    }
    observed: dict[str, int] = dict.fromkeys(FAULTS, 0)
    missing, unexpected = [], []
    for index, run in signalled.items():
        if run["rc"] != 2:
            unexpected.append(
                {
                    "test": plan["tests"][index]["name"],
                    "host": plan["tests"][index]["host"],
                    "fault": run["signal"]["fault"],
                    "when": "exit",
                    "text": f"pytest run {run['run']} exited with {run['rc']} after the signal, not 2 (interrupted)",
                }
            )
    for test in plan["tests"]:
        index, fault = test["index"], test["fault"]
        got = reports.get(index, {})
        outcome = {when: report["outcome"] for when, report in got.items()}
        happened = False
        if fault in EXPECTED_FAILURE:
            when, text = EXPECTED_FAILURE[fault]
            happened = when in got and got[when]["outcome"] == "failed" and text in got[when]["longrepr"]
        elif fault in OBSERVED_IN_TEST:
            happened = (index, fault) in seen
        elif fault in SIGNAL_FAULTS:
            happened = index in signalled
        if fault != "none":
            observed[fault] += happened
            if not happened:
                missing.append({"test": test["name"], "fault": fault, "outcome": outcome})
        # Every other phase must pass: a failure that is not the scheduled one is a finding.
        for when, report in got.items():
            planned = fault in EXPECTED_FAILURE and EXPECTED_FAILURE[fault][0] == when
            interrupted = fault in SIGNAL_FAULTS and when == "call"
            if report["outcome"] == "failed" and not planned and not interrupted and not report["drift"]:
                unexpected.append(
                    {
                        "test": test["name"],
                        "host": test["host"],
                        "fault": fault,
                        "when": when,
                        "text": report["longrepr"],
                    }
                )
    return observed, missing, unexpected


def run_soak(
    profile_name: str,
    workdir: Path,
    *,
    seed: int | None = None,
    tests: int | None = None,
    json_path: Path | None = None,
    keep_lab: bool = False,
    name: str | None = None,
    pytest_args: tuple[str, ...] = (),
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the soak and return its figures (see the module docstring); the lab is down afterwards."""
    profile = PROFILES[profile_name]
    started = time.monotonic()
    plan = make_plan(profile, seed=seed, tests=tests)
    workdir = Path(workdir).absolute()
    name = name or lab_name()
    spec = LabSpec(
        name=name,
        hosts=tuple(LabHostSpec(host, roles=(host,), init=init) for host, init in HOSTS),  # type: ignore[arg-type]
        packages=("nftables", "tree", *STATE_PACKAGES),
        user=LabUserSpec("labuser"),
    )
    lab = Lab(spec, workdir / "lab")
    result: dict[str, Any] = {"profile": profile.name, "seed": plan["seed"], "tests": len(plan["tests"]), **_source()}
    phases: dict[str, float] = {}
    try:
        lab.up()
        phases["lab_up_s"] = round(time.monotonic() - started, 1)
        plan["lab_dir"] = str(lab.directory)
        targets = _targets(lab)
        with ThreadPoolExecutor(len(targets)) as pool:  # the hosts one beside the other
            list(pool.map(_prepare, targets.values()))
            phases["prepare_s"] = round(time.monotonic() - started - phases["lab_up_s"], 1)
            before = dict(zip(targets, pool.map(fingerprint, targets.values()), strict=True))
        machine_before = machine_paths()
        (workdir / "fingerprints-before.json").write_text(json.dumps(before, indent=1))
        planned = f"{len(plan['tests'])} tests planned ({profile.name}, seed {plan['seed']})"
        say(f"soak: lab {name!r} up and prepared, {planned}")
        suite = workdir / "suite"
        _write_suite(suite, plan)
        events_path = suite / "events.jsonl"
        events_path.unlink(missing_ok=True)
        todo = {test["index"] for test in plan["tests"]}
        runs: list[dict[str, Any]] = []
        tests_started_at = time.monotonic()
        phases["before_tests_s"] = round(tests_started_at - started, 1)
        while todo:
            run = _Run(len(runs) + 1, suite, lab, plan, todo, limit=120 + 30 * len(todo)).go(list(pytest_args))
            runs.append(run)
            started_now = {e["index"] for e in _read_events(events_path) if e["kind"] == "start"}
            left = todo - started_now
            say(
                f"soak: run {run['run']}: rc {run['rc']}, {len(todo) - len(left)} tests in {run['wall_s']} s"
                + (
                    f", {run['signal']['fault'].upper()} during test_{run['signal']['index']:04d}"
                    if run["signal"]
                    else ""
                )
            )
            if left == todo:
                raise RuntimeError(f"soak: run {run['run']} started no test (rc {run['rc']}):\n{run['output_tail']}")
            todo = left
        tests_wall = time.monotonic() - tests_started_at
        with ThreadPoolExecutor(len(targets)) as pool:
            after = dict(zip(targets, pool.map(fingerprint, targets.values()), strict=True))
        machine_after = machine_paths()
        split = {
            host: shown_through(difference(before[host], after[host], limit=10**6), machine_before, machine_after)
            for host in before
        }
        (workdir / "fingerprints-after.json").write_text(json.dumps(after, indent=1))
        events = _read_events(events_path)
        observed, missing, unexpected = _check_tests(plan, events, runs)
        changes = [e for e in events if e["kind"] == "change"]
        drift = [
            {"test": plan["tests"][e["index"]]["name"], "text": e["drift_text"]}
            for e in events
            if e["kind"] == "report" and e["drift"]
        ]
        # One line per change left on a host: the rollback section's "NOT reverted" lines, and the
        # list a second signal prints ("  not reverted: ..."). A dead host's are told apart.
        leftover = sorted(
            {line.strip() for e in events if e["kind"] == "report" for line in e["not_reverted"]}
            | {
                line.strip()
                for run in runs
                for line in run["output"].splitlines()
                if line.startswith("  not reverted:")
            }
        )
        dead = [line for line in leftover if "unreachable" in line.lower()]
        failed = [line for line in leftover if line not in dead]
        wall = time.monotonic() - started
        result.update(
            {
                "hosts": dict(HOSTS),
                "tests_run": len({e["index"] for e in events if e["kind"] == "start"}),
                "pytest_runs": len(runs),
                "changes": len(changes),
                "changes_that_changed": sum(1 for e in changes if e["changed"]),
                "changes_by_kind": dict(sorted(collections.Counter(e["change"] for e in changes).items())),
                "faults_scheduled": {kind: profile.faults.get(kind, 0) for kind in FAULTS},
                "faults_observed": observed,
                "faults_missing": missing,
                "unexpected_failures": unexpected,
                "drift_reports": drift,
                "hosts_not_restored": {host: _limit(own) for host, (own, _) in split.items() if own},
                # paths below the overlays that the machine itself changed meanwhile: shown, not counted
                "machine_changes_shown_through": {host: _limit(seen) for host, (_, seen) in split.items() if seen},
                "fingerprint_entries": {host: len(entries) for host, entries in before.items()},
                "tool_traces_left": {host: traces(after[host]) for host in after if traces(after[host])},
                "not_reverted_host_dead": dead,
                "not_reverted_rollback_failed": failed,
                "wall_s": round(wall, 1),
                "tests_wall_s": round(tests_wall, 1),
                "phases": phases,
                "s_per_test": round(wall / len(plan["tests"]), 3),
                "runs": [{key: value for key, value in run.items() if key != "output"} for run in runs],
            }
        )
    finally:
        if not keep_lab:
            down = time.monotonic()
            _unlock(lab)
            lab.down()
            phases["lab_down_s"] = round(time.monotonic() - down, 1)
    say(summary(result))
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result, indent=1) + "\n")
    return result


def summary(result: dict[str, Any]) -> str:
    """The figures as the driver prints them."""
    if "wall_s" not in result:
        return f"soak ({result['profile']}): did not finish"
    faults = ", ".join(
        f"{kind} {result['faults_observed'][kind]}/{n}" for kind, n in result["faults_scheduled"].items() if n
    )
    lines = [
        f"soak ({result['profile']}, seed {result['seed']}): {result['tests']} tests on "
        + ", ".join(f"{host} ({init})" for host, init in result["hosts"].items()),
        f"  tests run:              {result['tests_run']} in {result['pytest_runs']} pytest run(s)",
        f"  changes made:           {result['changes']} ({result['changes_that_changed']} changed the host)",
        f"  faults (seen/planned):  {faults}",
        f"  drift reports:          {len(result['drift_reports'])}",
        f"  hosts not restored:     {len(result['hosts_not_restored'])}"
        + "".join(f"\n    {host}: {line}" for host, diff in result["hosts_not_restored"].items() for line in diff),
        f"  machine's changes seen through the overlays (not counted): "
        f"{sum(map(len, result['machine_changes_shown_through'].values()))}"
        + "".join(
            f"\n    {host}: {line}" for host, seen in result["machine_changes_shown_through"].items() for line in seen
        ),
        f"  tool's traces left:     {sum(map(len, result['tool_traces_left'].values()))}"
        + "".join(f"\n    {host}: {line}" for host, found in result["tool_traces_left"].items() for line in found),
        f"  not reverted, host dead: {len(result['not_reverted_host_dead'])}"
        + "".join(f"\n    {line[:300]}" for line in result["not_reverted_host_dead"]),
        f"  rollback errors:        {len(result['not_reverted_rollback_failed'])}"
        + "".join(f"\n    {line[:300]}" for line in result["not_reverted_rollback_failed"]),
        f"  unexpected failures:    {len(result['unexpected_failures'])}"
        + "".join(f"\n    {u['test']} ({u['fault']}, {u['when']})" for u in result["unexpected_failures"][:20]),
        f"  faults not seen:        {len(result['faults_missing'])}"
        + "".join(f"\n    {m['test']} ({m['fault']})" for m in result["faults_missing"][:20]),
        f"  wall time:              {result['wall_s']} s ({result['s_per_test']} s per test; "
        f"tests alone {result['tests_wall_s']} s)",
    ]
    return "\n".join(lines)
