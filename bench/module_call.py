"""Median cost of an Ansible module call per executor (standard, warm) against a raw command, on one lab host.

Usage::

    python3 bench/module_call.py                 # brings a one-host lab up and down (root)
    python3 bench/module_call.py -n 50 --executor warm
    python3 bench/module_call.py --inventory hosts.yml --host server1 --json out.json

Both executors live in this one process and are measured side by side: in every round each
kind is called once per executor, the executor order alternating from call to call, so that
load changes on the machine hit every kind and both executors alike. Warm-up rounds come
first (the warm agent starts there: its start-up is not in the medians); the agent's start
cost is measured separately, on fresh executors.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import json
import logging
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pytest_mh_ansible._private.ansible.executor import StandardExecutor
from pytest_mh_ansible._private.ansible.inventory import Inventory
from pytest_mh_ansible._private.ansible.warm import WarmExecutor
from pytest_mh_ansible._private.lab.spec import InitSystem
from pytest_mh_ansible.conn import Connection
from pytest_mh_ansible.host import MultihostHost
from pytest_mh_ansible.lab import dummy_init_script
from pytest_mh_ansible.modules import HostModules

EXECUTORS = ("standard", "warm")
RAW = "raw command `true` (Connection.run)"
SERVICE = "mhbenchsvc"
USER = "mhbenchuser"
COPY_DEST = "/tmp/mhbench-copy"
COPY_SAME_DEST = "/tmp/mhbench-copy-same"
TEMPLATE_DEST = "/tmp/mhbench-template"
LINE_DEST = "/tmp/mhbench-lineinfile"
SCRIPT = dummy_init_script(SERVICE, "dummy service of the module-call benchmark")

_STARTED = re.compile(r"warm agent started \(pid \d+, .*\) in (\d+) ms")
_FALLBACK = "module payload on the standard path"


class _WarmLog(logging.Handler):
    """Collects the warm executor's own reports: agent start times, fallbacks, lost agents."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.starts_ms: list[float] = []
        self.fallbacks: dict[str, int] = {}
        self.other: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "warm agent" not in message and _FALLBACK not in message and record.levelno < logging.WARNING:
            return
        match = _STARTED.search(message)
        if match:
            self.starts_ms.append(float(match.group(1)))
        elif _FALLBACK in message:
            reason = message.split(_FALLBACK + ": ", 1)[-1]
            self.fallbacks[reason] = self.fallbacks.get(reason, 0) + 1
        else:
            self.other.append(f"{record.levelname}: {message}")


@contextlib.contextmanager
def lab_host(
    given: str | None, name: str, *, lab: str = "mhbench", init: InitSystem | None = None
) -> Iterator[tuple[Inventory, MultihostHost]]:
    """The inventory and the host ``name`` to measure: from the inventory file ``given``, else from a
    one-host lab ``lab`` (host ``server1``) brought up for the run and down after it."""
    with contextlib.ExitStack() as stack:
        path = given
        if path is None:
            from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

            spec = LabSpec(name=lab, hosts=(LabHostSpec("server1", roles=("server",), init=init),))
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix=f"{lab}-"))
            path = str(stack.enter_context(Lab(spec, Path(tmp) / lab)).inventory_path)
        inventory = Inventory.load([path])
        variables = inventory.host(name).variables
        yield inventory, MultihostHost(name, roles=(), domain="default", variables=variables)


@contextlib.contextmanager
def module_log(handler: logging.Handler, level: int) -> Iterator[None]:
    """``handler`` on the module executors' logger (at ``level``) for the time of the block."""
    logger = logging.getLogger("pytest_mh_ansible.modules")
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _make(name: str, inventory: Inventory) -> StandardExecutor:
    return WarmExecutor(inventory, default="warm") if name == "warm" else StandardExecutor(inventory)


def _kinds(modules: HostModules, counter: Iterator[int], templates: Iterator[str]) -> dict[str, Callable[[], object]]:
    """The module calls, each one leaving the host as the next call of its kind expects it.

    :param templates: Template files on the controller, in turn, shared by the executors: each
        ``template`` call renders another one than the call before it, so every call changes the file.
    """
    return {
        "ansible.builtin.ping": lambda: modules.run("ansible.builtin.ping"),
        "ansible.builtin.stat /etc/passwd": lambda: modules.run("ansible.builtin.stat", path="/etc/passwd"),
        "ansible.builtin.command: true": lambda: modules.run("ansible.builtin.command", cmd="true"),
        "ansible.builtin.copy content (changed, diff)": lambda: modules.run(
            "ansible.builtin.copy", dest=COPY_DEST, content=f"call {next(counter)}\n"
        ),
        "ansible.builtin.copy content (changed, diff=False)": lambda: modules.run(
            "ansible.builtin.copy", dest=COPY_DEST, content=f"call {next(counter)}\n", diff=False
        ),
        "ansible.builtin.copy content (unchanged, diff)": lambda: modules.run(
            "ansible.builtin.copy", dest=COPY_SAME_DEST, content="the same\n"
        ),
        "ansible.builtin.template (changed, diff)": lambda: modules.run(
            "ansible.builtin.template", src=next(templates), dest=TEMPLATE_DEST
        ),
        "ansible.builtin.lineinfile (changed)": lambda: modules.run(
            "ansible.builtin.lineinfile", path=LINE_DEST, regexp="^key = ", line=f"key = {next(counter)}", create=True
        ),
        "ansible.builtin.user present (existing, unchanged)": lambda: modules.run(
            "ansible.builtin.user", name=USER, state="present"
        ),
        "ansible.builtin.service restarted (sysv)": lambda: modules.run(
            "ansible.builtin.service", name=SERVICE, state="restarted"
        ),
    }


def _first_calls(inventory: Inventory, host: MultihostHost, names: list[str], count: int) -> dict[str, list[float]]:
    """The first ``ping`` of a fresh executor (its ControlMaster, and for warm the agent start), ``count`` times."""
    first: dict[str, list[float]] = {name: [] for name in names}
    for i in range(count):
        for name in names if i % 2 == 0 else reversed(names):
            executor = _make(name, inventory)
            try:
                started = time.perf_counter()
                HostModules(host, executor).run("ansible.builtin.ping")
                first[name].append((time.perf_counter() - started) * 1000)
            finally:
                executor.close()
    return first


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", help="an inventory to use instead of a new lab")
    parser.add_argument("--host", default="server1", help="the inventory host to measure (default: server1)")
    parser.add_argument("-n", type=int, default=30, help="timed calls per kind and executor (default: 30)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed rounds first (default: 3)")
    parser.add_argument(
        "--executor", default="standard,warm", help="comma list of executors: standard, warm (default: both)"
    )
    parser.add_argument(
        "--agent-starts", type=int, default=3, help="fresh executors timed on their first ping (default: 3; 0: none)"
    )
    parser.add_argument("--json", metavar="FILE", help="write the configuration, the figures and every sample")
    parser.add_argument("--lab", default="mhbench", help="the name of the lab brought up (default: mhbench)")
    options = parser.parse_args(argv)
    names = [name.strip() for name in options.executor.split(",") if name.strip()]
    if not names or set(names) - set(EXECUTORS) or len(set(names)) != len(names):
        parser.error("--executor takes a comma list of: standard, warm")
    names = [name for name in EXECUTORS if name in names]  # table order: standard, warm
    if options.n < 1 or options.warmup < 1:
        parser.error("-n and --warmup must be at least 1 (the warm-up keeps agent start-up out of the medians)")

    warm_log = _WarmLog()
    started_all = time.perf_counter()
    load_at_start = list(os.getloadavg())

    with (
        module_log(warm_log, logging.INFO),
        lab_host(options.inventory, options.host, lab=options.lab) as (inventory, host),
        tempfile.TemporaryDirectory(prefix="mhbench-templates-") as template_dir,
    ):
        templates = []
        for number in (1, 2):
            path = Path(template_dir) / f"motd{number}.j2"
            path.write_text(f"host={{{{ inventory_hostname }}}} version={number}\nitems={{{{ [3, 1, 2] | sort }}}}\n")
            templates.append(str(path))
        conn = Connection(options.host, host.vars)
        executors = {name: _make(name, inventory) for name in names}
        modules = {name: HostModules(host, executor) for name, executor in executors.items()}
        counter = iter(range(10**9))
        turns = itertools.cycle(templates)
        calls = {name: _kinds(modules[name], counter, turns) for name in names}
        kinds = [RAW, *calls[names[0]]]
        times: dict[str, dict[str, list[float]]] = {kind: {name: [] for name in names} for kind in kinds}
        # Module payloads served and fallen back, and the action plugins' own steps (commands and
        # transfers) through the agent ("exec" in a shell, "step" with system calls, "put", "fetch") or on the
        # standard path ("standard").
        route_keys = ("served", "fell_back", "exec", "step", "put", "fetch", "standard")
        routes: dict[str, dict[str, int]] = {kind: dict.fromkeys(route_keys, 0) for kind in kinds}
        first: dict[str, list[float]] = {}
        warmup_starts: list[float] = []
        fallbacks_in_warmup: dict[str, int] = {}
        try:
            # The host's state for the calls: the dummy service, an existing user (raw commands: no executor warms up).
            conn.run(f"cat > /etc/init.d/{SERVICE} && chmod 0755 /etc/init.d/{SERVICE}", input=SCRIPT)
            conn.run(f"id {USER} >/dev/null 2>&1 || useradd --create-home {USER}")

            def one_round(timed: bool, round_no: int) -> None:
                started = time.perf_counter()
                conn.run("true")
                if timed:
                    for name in names:  # one sample per round, listed under every executor
                        times[RAW][name].append((time.perf_counter() - started) * 1000)
                for index, kind in enumerate(kinds[1:]):
                    order = names if (round_no + index) % 2 == 0 else list(reversed(names))
                    for name in order:
                        call = calls[name][kind]
                        started = time.perf_counter()
                        call()
                        elapsed = (time.perf_counter() - started) * 1000
                        if not timed:
                            continue
                        times[kind][name].append(elapsed)
                        executor = executors[name]
                        if isinstance(executor, WarmExecutor):
                            served, fell_back = executor.last_route
                            routes[kind]["served"] += served
                            routes[kind]["fell_back"] += fell_back
                            # (an executor of before the action steps went to the agent has none)
                            for step, count in getattr(executor, "last_steps", {}).items():
                                routes[kind][step] = routes[kind].get(step, 0) + count

            for r in range(options.warmup):
                one_round(False, r)
            warmup_starts = list(warm_log.starts_ms)
            fallbacks_in_warmup = dict(warm_log.fallbacks)
            warm_log.fallbacks.clear()
            for r in range(options.n):
                one_round(True, r)
            if options.agent_starts:
                first = _first_calls(inventory, host, names, options.agent_starts)
        finally:
            for executor in executors.values():
                with contextlib.suppress(Exception):
                    executor.close()
            with contextlib.suppress(Exception):
                conn.run(
                    f"/etc/init.d/{SERVICE} stop; rm -f /etc/init.d/{SERVICE} {COPY_DEST} {COPY_SAME_DEST}"
                    f" {TEMPLATE_DEST} {LINE_DEST};"
                    f" if id {USER} >/dev/null 2>&1; then userdel --remove {USER}; fi",
                    raise_on_error=False,
                )
            conn.close()

    duration = time.perf_counter() - started_all
    figures: dict[str, dict[str, Any]] = {}
    for kind in kinds:
        figures[kind] = {}
        for name in names:
            values = times[kind][name]
            figures[kind][name] = {"median_ms": statistics.median(values), "p90_ms": _percentile(values, 0.9)}
    later_starts = warm_log.starts_ms[len(warmup_starts) :]

    print(
        f"host {options.host}, {options.n} timed calls per kind and executor after {options.warmup} warm-up rounds;"
        f" {duration:.0f} s in all"
    )
    headers = ["kind"]
    for name in names:
        headers += [f"{name} median ms", f"{name} p90 ms"]
    if len(names) == 2:
        headers.append("standard / warm")
    rows = []
    for kind in kinds:
        row = [kind]
        for name in names:
            row += [f"{figures[kind][name]['median_ms']:.1f}", f"{figures[kind][name]['p90_ms']:.1f}"]
        if len(names) == 2:
            ratio = figures[kind]["standard"]["median_ms"] / figures[kind]["warm"]["median_ms"]
            row.append("-" if kind == RAW else f"{ratio:.2f}")
        rows.append(row)
    _print_table(headers, rows)
    if "warm" in names:
        served = sum(r["served"] for r in routes.values())
        fell_back = sum(r["fell_back"] for r in routes.values())
        print(f"warm: timed calls sent {served} module payloads to the agent, {fell_back} took the standard path")
        steps = {step: sum(r[step] for r in routes.values()) for step in ("exec", "step", "put", "fetch", "standard")}
        print(
            f"warm: the action plugins' own steps: {steps['exec']} commands in a shell, {steps['step']} done by the"
            f" agent with system calls, {steps['put']} uploads and"
            f" {steps['fetch']} downloads through the agent, {steps['standard']} on the standard path"
        )
        for kind, route in routes.items():
            if route["fell_back"]:
                print(f"  {kind}: {route['fell_back']} payloads on the standard path")
        for reason, count in {**fallbacks_in_warmup, **warm_log.fallbacks}.items():
            print(f"  'module payload on the standard path: {reason}' x{count}")
        for line in warm_log.other:
            print(f"  {line}")
        if warmup_starts:
            listed = ", ".join(f"{v:.0f}" for v in warmup_starts)
            print(f"warm agent start in the warm-up (from its log line): {listed} ms")
    if first:
        parts = [f"{name} {statistics.median(values):.0f} ms" for name, values in first.items()]
        print(f"first ping of a fresh executor (median of {options.agent_starts}): {', '.join(parts)}", end="")
        print(f"; warm agent start in those: median {statistics.median(later_starts):.0f} ms" if later_starts else "")

    if options.json:
        result = {
            "config": {
                "host": options.host,
                "n": options.n,
                "warmup_rounds": options.warmup,
                "executors": names,
                "agent_starts": options.agent_starts,
                "python": platform.python_version(),
                "ansible_core": package_version("ansible-core"),
                "commit": _measured_commit(),
                "load_average": {"start": load_at_start, "end": list(os.getloadavg())},
                "duration_s": round(duration, 1),
            },
            "figures": figures,
            "samples": times,
            "warm_routes": routes if "warm" in names else None,
            "warm_agent_start_ms": {"warmup": warmup_starts, "fresh": later_starts},
            "first_ping_ms": first,
            "fallbacks": {**fallbacks_in_warmup, **warm_log.fallbacks} if "warm" in names else {},
        }
        Path(options.json).write_text(json.dumps(result, indent=1))
        print(f"JSON written to {options.json}")
    return 0


def _measured_commit() -> str:
    """The commit of the pytest_mh_ansible that was measured (``+dirty`` with uncommitted changes in it)."""
    import pytest_mh_ansible

    where = Path(pytest_mh_ansible.__file__).parent
    run = functools.partial(subprocess.run, capture_output=True, text=True, check=False, cwd=where)
    commit = run(["git", "rev-parse", "--short=10", "HEAD"]).stdout.strip() or "unknown"
    dirty = run(["git", "status", "--porcelain", "--", "."]).stdout.strip()
    return commit + ("+dirty" if dirty else "")


def package_version(dist: str) -> str | None:
    """The installed version of ``dist`` in this interpreter, or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths, strict=True))))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))))


if __name__ == "__main__":
    sys.exit(main())
