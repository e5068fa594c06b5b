"""The floor of a module-backed user or group add: the module call alone, against the whole raw add + delete.

Usage::

    python3 bench/module_floor.py                  # brings a one-host systemd lab up and down (root)
    python3 bench/module_floor.py -n 40 --json bench/results/floor-<stamp>.json
    python3 bench/module_floor.py --inventory hosts.yml --host server1
    python3 bench/module_floor.py --pool before=a.json,c.json after=b.json,d.json --json pooled.json
    python3 bench/module_floor.py --probe-apart     # + the probe as its own command, as without a carrier

Issue #15 asks for ``users.add`` and ``users.add_group`` with their rollback at no more than what
pytest-mh's shell commands cost (``useradd`` then ``userdel --remove``; ``groupadd`` then
``groupdel``), while the change still goes through an Ansible module. This script measures the
part of ours that no journal, probe or undo work can remove: one warm ``ansible.builtin.user`` or
``ansible.builtin.group`` call that adds (``changed``), with no rollback journal at all, next to the
*whole* raw pair (add and delete as two commands over the command agent, as the raw path and
pytest-mh run them). After a module call the journal's own undo command for it (``userdel --remove
--force``, ``groupdel``) is timed on its own: the module call plus that undo is what a
module-backed add with its rollback costs at the least, with no probe and no journal work.

Beside them, the whole of what a test pays (#33): ``host.ansible.run`` of the same add with the
rollback journal and the journal on the host, from the call to the end of its scope's undo (the
probe, the entry on the host, the module call, the undo, the done mark). Each of these kinds also
counts its round trips to the host (the command agent's commands and scripts, the module calls).
On the warm executor the probe with the entry travels in the module call's request; ``--probe-apart``
adds the same add with the probe as a command of its own (as the standard executor runs it), in the
same rounds, and the median of the rounds' differences.

In every round each kind runs once, the order rotating from round to round. The executor's log line
of each call gives the agent's share (``run`` ms: fork, the AnsiballZ wrapper, the module, its
``useradd``/``groupadd``, exit), so the controller's share is the rest.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from compare import git_commit
from module_call import lab_host, module_log, package_version

from pytest_mh_ansible._private.ansible.transport import AnsibleTransport
from pytest_mh_ansible._private.ansible.warm import WarmExecutor
from pytest_mh_ansible._private.rollback.host_journal import RUN_ID, HostJournal
from pytest_mh_ansible._private.rollback.inverses import JournalRecorder
from pytest_mh_ansible.conn import Connection
from pytest_mh_ansible.host import MultihostHost
from pytest_mh_ansible.modules import HostModules
from pytest_mh_ansible.rollback import RollbackJournal

USER = "mhflooruser"
GROUP = "mhfloorgroup"
_AGENT_RUN = re.compile(r"warm module call rc=0 \(agent: prepare [\d.]+ ms, run ([\d.]+) ms\)")


class _AgentRuns(logging.Handler):
    """The agent's ``run`` share of each warm module call, from the executor's debug line."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.runs: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        match = _AGENT_RUN.search(record.getMessage())
        if match:
            self.runs.append(float(match.group(1)))


class _Trips:
    """Counts round trips to the host: each command or script of the command agent, each module call."""

    def __init__(self) -> None:
        self.count = 0

    def wrap(self, target: object, *names: str) -> None:
        for name in names:
            inner = getattr(target, name, None)
            if inner is None:
                continue

            def counted(*args: Any, _inner: Callable[..., Any] = inner, **kwargs: Any) -> Any:
                self.count += 1
                return _inner(*args, **kwargs)

            setattr(target, name, counted)


class _WritesApart(JournalRecorder):
    """The journal's host writes as before #33, for a side-by-side in the same rounds: the probe, the entry and
    the done mark each a command of its own (the probe itself and everything else as now)."""

    def _probe(self, token: Any, account: Any, probe: str, state: Any, decide: Callable[[str], None]) -> None:
        decide(str(token.host.conn.run(probe, raise_on_error=False).stdout))  # the entry follows, apart

    def _marked(self, token: Any, undo: Callable[[], None]) -> Callable[[], None]:
        persist, number = self.persist, token.persisted
        if persist is None or number is None:
            return undo

        def undo_then_queue() -> None:
            undo()
            persist.done(token.host, number)  # written by the flush at the end of the scope

        return undo_then_queue


class _ProbeApart(JournalRecorder):
    """The account's probe with its entry as one command of its own before the module call (3 round trips), as
    the standard executor runs it, instead of carried in the warm module call's request (#33, same rounds)."""

    def prepare_deferred(self, host: Any, module: str, args: Any, *, revert_paths: Any) -> tuple[object, None]:
        token, before = super().prepare_deferred(host, module, args, revert_paths=revert_paths)
        if before is not None:
            before.run_apart()  # now, over the connection: what the module call gets has nothing to carry
        return token, None


def _rollback_kinds(
    host: MultihostHost,
    executor: WarmExecutor,
    conn: Connection,
    *,
    apart_too: bool = False,
    probe_apart_too: bool = False,
) -> tuple[dict[str, tuple[Callable[[], object], Callable[[], object]]], Callable[[], None]]:
    """The add with its rollback as a test pays it: ``host.ansible.run`` in a journal scope, then the scope's undo."""
    journal = RollbackJournal()
    persist = HostJournal(f"bench/{os.getpid()}/{RUN_ID}")
    journal.on_close.append(lambda scope: persist.flush())
    modules = HostModules(host, executor, recorder=JournalRecorder(journal, persist=persist))
    apart = HostModules(host, executor, recorder=_WritesApart(journal, persist=persist)) if apart_too else None
    probe_apart = (
        HostModules(host, executor, recorder=_ProbeApart(journal, persist=persist)) if probe_apart_too else None
    )
    host._mh_attach(SimpleNamespace(connection=lambda: conn, playbooks=None, modules=modules, journal=journal))  # type: ignore[arg-type]

    def with_rollback(name: str, args: dict[str, Any], through: HostModules = modules) -> Callable[[], object]:
        def call() -> object:
            journal.open("test")
            try:
                result = through.run(name, **args)
                if not result.changed:
                    raise RuntimeError(f"{name} {args}: not changed (was the rollback missed?)")
            finally:
                journal.close("test")
            return result

        return call

    def nothing() -> object:
        return None

    kinds: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
        "group add with rollback (host.ansible.run)": (
            with_rollback("ansible.builtin.group", {"name": GROUP, "state": "present"}),
            nothing,
        ),
        "user add with rollback (host.ansible.run)": (
            with_rollback("ansible.builtin.user", {"name": USER, "state": "present", "create_home": True}),
            nothing,
        ),
    }
    if apart is not None:
        kinds["group add with rollback, journal writes apart"] = (
            with_rollback("ansible.builtin.group", {"name": GROUP, "state": "present"}, apart),
            nothing,
        )
        kinds["user add with rollback, journal writes apart"] = (
            with_rollback("ansible.builtin.user", {"name": USER, "state": "present", "create_home": True}, apart),
            nothing,
        )
    if probe_apart is not None:
        kinds["group add with rollback, probe apart"] = (
            with_rollback("ansible.builtin.group", {"name": GROUP, "state": "present"}, probe_apart),
            nothing,
        )
        kinds["user add with rollback, probe apart"] = (
            with_rollback("ansible.builtin.user", {"name": USER, "state": "present", "create_home": True}, probe_apart),
            nothing,
        )
    return kinds, lambda: persist.finish(host)


def _kinds(modules: HostModules, conn: Connection) -> dict[str, tuple[Callable[[], object], Callable[[], object]]]:
    """Each kind: (the timed part, the untimed clean-up that lets the next round add again)."""

    def nothing() -> None:
        return None

    def module(name: str, args: dict[str, Any]) -> Callable[[], object]:
        def call() -> object:
            result = modules.run(name, **args)
            if not result.changed:
                raise RuntimeError(f"{name} {args}: not changed (was the clean-up missed?)")
            return result

        return call

    return {
        "group module add (alone, warm)": (
            module("ansible.builtin.group", {"name": GROUP, "state": "present"}),
            lambda: conn.run(f"groupdel {GROUP}"),  # the journal's undo of a group it saw created
        ),
        "raw groupadd + groupdel": (lambda: (conn.run(f"groupadd {GROUP}"), conn.run(f"groupdel {GROUP}")), nothing),
        "user module add (alone, warm)": (
            module("ansible.builtin.user", {"name": USER, "state": "present", "create_home": True}),
            lambda: conn.run(f"userdel --remove --force {USER}"),  # the journal's undo of a user it saw created
        ),
        "raw useradd + userdel": (
            lambda: (conn.run(f"useradd --create-home {USER}"), conn.run(f"userdel --remove {USER}")),
            nothing,
        ),
    }


def _pool(variants: list[str], out: str | None) -> int:
    """The samples of several runs per variant pooled: each kind's median, its range of run medians, round trips."""
    pooled: dict[str, Any] = {}
    for variant in variants:
        label, _, files = variant.partition("=")
        runs = [json.loads(Path(path).read_text()) for path in files.split(",") if path]
        kinds: dict[str, Any] = {}
        for kind in runs[0]["samples"]:
            samples = [ms for run in runs for ms in run["samples"].get(kind, [])]
            trips = [n for run in runs for n in run.get("round_trips", {}).get(kind, [])]
            medians = [run["figures"][kind]["median_ms"] for run in runs if kind in run["figures"]]
            kinds[kind] = {
                "median_ms": statistics.median(samples),
                "run_medians_ms": medians,
                "round_trips_median": statistics.median(trips) if trips else None,
            }
        pooled[label] = {
            "files": [Path(path).name for path in files.split(",") if path],
            "commits": sorted({run["config"]["commit"] for run in runs}),
            "load_average_before": [run["config"]["load_average_before"][0] for run in runs],
            "kinds": kinds,
        }
        print(f"{label} ({len(runs)} runs, commits {', '.join(pooled[label]['commits'])}):")
        for kind, figure in kinds.items():
            trips_text = (
                "" if figure["round_trips_median"] is None else f"  round trips {figure['round_trips_median']:g}"
            )
            ranges = "/".join(f"{ms:.0f}" for ms in figure["run_medians_ms"])
            print(f"  {kind:<44} pooled median {figure['median_ms']:6.1f} ms (runs {ranges}){trips_text}")
    if out:
        Path(out).write_text(json.dumps({"pooled": pooled}, indent=1))
        print(f"JSON written to {out}")
    return 0


def _paired_differences(times: dict[str, list[float]], variant: str) -> dict[str, float]:
    """For group and user: the median over rounds of (the add with rollback, ``variant``) minus (the default path)."""
    return {
        what: statistics.median(
            apart - combined
            for apart, combined in zip(
                times[f"{what} add with rollback, {variant}"],
                times[f"{what} add with rollback (host.ansible.run)"],
                strict=True,
            )
        )
        for what in ("group", "user")
        if f"{what} add with rollback, {variant}" in times
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", help="an inventory to use instead of a new lab")
    parser.add_argument("--host", default="server1", help="the inventory host to measure (default: server1)")
    parser.add_argument("-n", type=int, default=30, help="timed rounds (default: 30)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed rounds first (default: 3)")
    parser.add_argument("--json", metavar="FILE", help="write the configuration, the figures and every sample")
    parser.add_argument("--lab", default="mhfloor", help="the name of the lab brought up (default: mhfloor)")
    parser.add_argument(
        "--apart",
        action="store_true",
        help="also the add with its rollback with the journal's host writes apart, as before #33 (same rounds)",
    )
    parser.add_argument(
        "--probe-apart",
        action="store_true",
        help="also the add with its rollback with the probe and its entry as a command of its own before the "
        "module call, as the standard executor runs it (3 round trips; same rounds)",
    )
    parser.add_argument(
        "--pool",
        nargs="+",
        metavar="VARIANT=FILE,...",
        help="measure nothing: pool the samples of runs written with --json, per variant (alternated runs)",
    )
    options = parser.parse_args(argv)
    if options.pool:
        return _pool(options.pool, options.json)
    if options.n < 1 or options.warmup < 1:
        parser.error("-n and --warmup must be at least 1 (the warm-up starts both agents)")

    agent_runs = _AgentRuns()
    load_before = os.getloadavg()
    started_all = time.perf_counter()
    with (
        module_log(agent_runs, logging.DEBUG),
        lab_host(options.inventory, options.host, lab=options.lab, init="systemd") as (inventory, host),
    ):
        trips = _Trips()
        transport = AnsibleTransport(options.host, host.vars, command_agent=True)
        trips.wrap(transport, "exec", "script", "put", "get")
        conn = Connection(options.host, host.vars, transport=transport)
        executor = WarmExecutor(inventory, default="warm")
        trips.wrap(executor, "run")
        kinds = _kinds(HostModules(host, executor), conn)
        rollback, finish = _rollback_kinds(
            host, executor, conn, apart_too=options.apart, probe_apart_too=options.probe_apart
        )
        kinds.update(rollback)
        names = list(kinds)
        times: dict[str, list[float]] = {name: [] for name in names}
        agent: dict[str, list[float]] = {name: [] for name in names if "module" in name}
        undo: dict[str, list[float]] = {name: [] for name in agent}
        round_trips: dict[str, list[int]] = {name: [] for name in names}
        try:
            conn.run(f"! getent group {GROUP} >/dev/null && ! getent passwd {USER} >/dev/null")
            for round_no in range(options.warmup + options.n):
                timed = round_no >= options.warmup
                shift = round_no % len(names)
                for name in names[shift:] + names[:shift]:
                    measured, clean_up = kinds[name]
                    before = len(agent_runs.runs)
                    trips_before = trips.count
                    started = time.perf_counter()
                    measured()
                    elapsed = (time.perf_counter() - started) * 1000
                    trips_taken = trips.count - trips_before
                    started = time.perf_counter()
                    clean_up()
                    undone = (time.perf_counter() - started) * 1000
                    if timed:
                        times[name].append(elapsed)
                        round_trips[name].append(trips_taken)
                        if name in undo:
                            undo[name].append(undone)
                        if name in agent and len(agent_runs.runs) == before + 1:
                            agent[name].append(agent_runs.runs[-1])
                if round_no == 0:
                    time.sleep(2)  # the command agent starts in the background on the first command
        finally:
            with contextlib.suppress(Exception):
                finish()
            with contextlib.suppress(Exception):
                executor.close()
            with contextlib.suppress(Exception):
                conn.run(f"userdel --remove {USER} 2>/dev/null; groupdel {GROUP} 2>/dev/null; true")
            conn.close()
    duration = time.perf_counter() - started_all

    figures: dict[str, dict[str, float]] = {}
    for name in names:
        figures[name] = {
            "median_ms": statistics.median(times[name]),
            "min_ms": min(times[name]),
            "round_trips_median": statistics.median(round_trips[name]),
        }
        if agent.get(name):
            figures[name]["agent_run_median_ms"] = statistics.median(agent[name])
        if undo.get(name):
            figures[name]["undo_median_ms"] = statistics.median(undo[name])
            floor = [call + back for call, back in zip(times[name], undo[name], strict=True)]
            figures[name]["with_undo_median_ms"] = statistics.median(floor)
    group, user = figures["group module add (alone, warm)"], figures["user module add (alone, warm)"]
    ratios = {
        "group add with rollback / raw groupadd + groupdel": figures["group add with rollback (host.ansible.run)"][
            "median_ms"
        ]
        / figures["raw groupadd + groupdel"]["median_ms"],
        "user add with rollback / raw useradd + userdel": figures["user add with rollback (host.ansible.run)"][
            "median_ms"
        ]
        / figures["raw useradd + userdel"]["median_ms"],
        "group module add alone / raw groupadd + groupdel": group["median_ms"]
        / figures["raw groupadd + groupdel"]["median_ms"],
        "group module add + its undo / raw groupadd + groupdel": group["with_undo_median_ms"]
        / figures["raw groupadd + groupdel"]["median_ms"],
        "user module add alone / raw useradd + userdel": user["median_ms"]
        / figures["raw useradd + userdel"]["median_ms"],
        "user module add + its undo / raw useradd + userdel": user["with_undo_median_ms"]
        / figures["raw useradd + userdel"]["median_ms"],
    }
    # Same rounds, so the same load: the round-by-round difference of a variant and the default path.
    paired = _paired_differences(times, "journal writes apart")
    carried = _paired_differences(times, "probe apart")
    print(f"host {options.host}: {options.n} timed rounds after {options.warmup} warm-up rounds; {duration:.0f} s")
    width = max(map(len, names))
    for name in names:
        line = f"  {name:<{width}}  median {figures[name]['median_ms']:6.1f} ms  min {figures[name]['min_ms']:6.1f} ms"
        line += f"  round trips {figures[name]['round_trips_median']:g}"
        if "agent_run_median_ms" in figures[name]:
            line += f"  (agent's run {figures[name]['agent_run_median_ms']:.1f} ms)"
        if "with_undo_median_ms" in figures[name]:
            undo_ms, both_ms = figures[name]["undo_median_ms"], figures[name]["with_undo_median_ms"]
            line += f"; its undo {undo_ms:.1f} ms, both {both_ms:.1f} ms"
        print(line)
    for label, ratio in ratios.items():
        print(f"  {label}: {ratio:.2f}")
    for what, difference in paired.items():
        print(f"  {what} add with rollback, writes apart minus combined, median of the rounds: {difference:.1f} ms")
    for what, difference in carried.items():
        print(f"  {what} add with rollback, probe apart minus carried, median of the rounds: {difference:.1f} ms")
    if options.json:
        result = {
            "config": {
                "host": options.host,
                "n": options.n,
                "warmup_rounds": options.warmup,
                "python": platform.python_version(),
                "ansible_core": package_version("ansible-core"),
                "commit": git_commit(),
                "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "load_average_before": [round(v, 2) for v in load_before],
                "load_average_after": [round(v, 2) for v in os.getloadavg()],
                "duration_s": round(duration, 1),
            },
            "figures": figures,
            "ratios": ratios,
            "samples": times,
            "agent_run_ms": agent,
            "undo_ms": undo,
            "round_trips": round_trips,
            "paired_apart_minus_combined_ms": paired,
            "paired_probe_apart_minus_carried_ms": carried,
        }
        Path(options.json).write_text(json.dumps(result, indent=1))
        print(f"JSON written to {options.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
