"""What each of a ``copy``'s own steps and module calls costs on a warm ssh host, its shell steps done both ways.

Usage::

    python3 bench/action_steps.py                 # brings a one-host lab up and down (root)
    python3 bench/action_steps.py -n 30 --json bench/results/action-steps-<stamp>-<commit>.json
    python3 bench/action_steps.py --inventory hosts.yml --host server1

A ``copy`` with ``content=`` and a diff runs, around its four module calls, the ``sh`` shell plugin's
own steps (``echo ~root``, the tmp dir's ``mkdir`` group, ``chmod u+rwx``, ``rm -f -r``). The warm
agent does those with system calls (``step``), else it runs them in a shell (``exec``). This script
times every step of the same ``copy`` calls, alternating the two ways call by call (the shell way by
declining the agent's reading of the command, as for a text it does not know), and every module
call's share: the agent's ``run`` (fork, wrapper, module, exit) from the executor's log line, and the
rest of the call on the controller. Medians in ms.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from compare import git_commit
from module_call import lab_host, module_log, package_version

from pytest_mh_ansible._private.ansible import warm
from pytest_mh_ansible._private.ansible.warm import WarmExecutor

DEST = "/etc/mh-action-steps.conf"
CALL: dict[str, Any] = dict(check=False, diff=True, become=None, become_user=None, no_log=False, template=False)
_RUN_MS = re.compile(r"warm module call rc=\d+ \(agent: prepare ([\d.]+) ms, run ([\d.]+) ms\)")
_KINDS = {"echo": "echo ~", "mkdtemp": "( umask", "chmod": "chmod ", "rm": "rm -f "}


class _Runs(logging.Handler):
    """The agent's share of each module call, from the executor's debug line."""

    def __init__(self) -> None:
        super().__init__()
        self.agent_ms: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        if match := _RUN_MS.search(record.getMessage()):
            self.agent_ms.append(float(match.group(1)) + float(match.group(2)))


def _kind(cmd: str) -> str:
    return next((kind for kind, start in _KINDS.items() if cmd.startswith(start)), "other")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inventory", help="an inventory to use instead of a new lab")
    parser.add_argument("--host", default="server1", help="the inventory host to measure (default: server1)")
    parser.add_argument("-n", type=int, default=30, help="timed copy calls per way (default: 30)")
    parser.add_argument("--json", metavar="FILE", help="write the configuration, the medians and every sample")
    options = parser.parse_args()

    steps: dict[str, dict[str, list[float]]] = {way: {kind: [] for kind in _KINDS} for way in ("agent", "shell")}
    calls: dict[str, list[float]] = {"agent": [], "shell": []}
    modules: dict[str, list[float]] = {"call": [], "agent": []}
    way = ["agent"]
    timed = [False]
    original_command = warm._Router._command
    original_execute = warm._Router.execute
    original_sh_step = warm._sh_step

    def sh_step(shell: Any, cmd: str) -> dict[str, Any] | None:
        return original_sh_step(shell, cmd) if way[0] == "agent" else None

    def command(self: Any, action: Any, original: Any, cmd: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        result = original_command(self, action, original, cmd, kwargs)
        if timed[0]:
            steps[way[0]][_kind(cmd)].append((time.perf_counter() - started) * 1000)
        return result

    def execute(self: Any, action: Any, original: Any, cmd: str, **kwargs: Any) -> dict[str, Any]:
        started = time.perf_counter()
        result = original_execute(self, action, original, cmd, **kwargs)
        if timed[0] and b"_ansiballz_main(" in (kwargs.get("in_data") or b""):
            modules["call"].append((time.perf_counter() - started) * 1000)
        return result

    runs = _Runs()
    warm._sh_step = sh_step  # type: ignore[assignment]
    warm._Router._command = command  # type: ignore[method-assign]
    warm._Router.execute = execute  # type: ignore[method-assign]
    counter = itertools.count()
    with lab_host(options.inventory, options.host) as (inventory, _), module_log(runs, logging.DEBUG):
        executor = WarmExecutor(inventory, default="warm")
        try:
            run: Callable[[], dict[str, Any]] = lambda: executor.run(  # noqa: E731
                options.host, "ansible.builtin.copy", {"dest": DEST, "content": f"call {next(counter)}\n"}, **CALL
            )
            for _ in range(3):  # warm-up: the agent starts, the modules' zips are kept
                run()
            timed[0] = True
            for i in range(2 * options.n):
                way[0] = ("agent", "shell")[i % 2]
                runs.agent_ms.clear()
                started = time.perf_counter()
                result = run()
                calls[way[0]].append((time.perf_counter() - started) * 1000)
                if not result.get("changed"):
                    raise RuntimeError(f"copy did not change {DEST}: {result}")
                modules["agent"].extend(runs.agent_ms)
            executor.run(options.host, "ansible.builtin.file", {"path": DEST, "state": "absent"}, **CALL)
        finally:
            executor.close()

    def med(values: list[float]) -> float | None:
        return round(statistics.median(values), 2) if values else None

    medians = {
        "copy_call_ms": {w: med(v) for w, v in calls.items()},
        "step_ms": {w: {k: med(v) for k, v in kinds.items()} for w, kinds in steps.items()},
        "module_call_ms": med(modules["call"]),
        "module_agent_ms": med(modules["agent"]),
    }
    print(json.dumps(medians, indent=2))
    if options.json:
        document = {
            "what": "one copy (content, diff) on a warm ssh host: its shell steps by the agent or in a shell,"
            " alternating call by call; module calls: the whole call and the agent's prepare + run",
            "config": {
                "n_per_way": options.n,
                "commit": git_commit(),
                "python": platform.python_version(),
                "ansible_core": package_version("ansible-core"),
                "date_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
            "medians": medians,
            "samples": {"copy_call_ms": calls, "step_ms": steps, "modules": modules},
        }
        Path(options.json).write_text(json.dumps(document, indent=1) + "\n")
        print(f"JSON written to {options.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
