"""Median cost of an Ansible module call (in-process executor) against a raw command, on one lab host.

Usage::

    python3 bench/module_call.py                 # brings a one-host lab up and down (root)
    python3 bench/module_call.py -n 50
    python3 bench/module_call.py --inventory hosts.yml --host server1

The kinds are measured round-robin (one call of each kind per round), so that load
changes on the machine hit every kind alike.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from pytest_mh_ansible._private.executor import StandardExecutor
from pytest_mh_ansible._private.inventory import Inventory
from pytest_mh_ansible.conn import Connection
from pytest_mh_ansible.host import MultihostHost
from pytest_mh_ansible.modules import HostModules

SERVICE = "mhbenchsvc"
SCRIPT = """#!/bin/sh
### BEGIN INIT INFO
# Provides:          mhbenchsvc
# Required-Start:    $remote_fs
# Required-Stop:     $remote_fs
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: dummy service of the module-call benchmark
### END INIT INFO
PIDFILE=/run/mhbenchsvc.pid
case "$1" in
  start) start-stop-daemon --start --quiet --background --make-pidfile --pidfile $PIDFILE --exec /bin/sleep -- 100000 ;;
  stop) start-stop-daemon --stop --quiet --oknodo --remove-pidfile --pidfile $PIDFILE ;;
  restart) $0 stop; $0 start ;;
  status) start-stop-daemon --status --pidfile $PIDFILE; rc=$?; [ $rc -eq 1 ] && rc=3; exit $rc ;;
  *) exit 2 ;;
esac
"""


@contextlib.contextmanager
def _inventory_path(given: str | None) -> Iterator[str]:
    if given is not None:
        yield given
        return
    from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

    spec = LabSpec(name="mhbench", hosts=(LabHostSpec("server1", roles=("server",)),))
    with tempfile.TemporaryDirectory(prefix="mhbench-") as tmp, Lab(spec, Path(tmp) / "mhbench") as lab:
        yield str(lab.inventory_path)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", help="an inventory to use instead of a new lab")
    parser.add_argument("--host", default="server1", help="the inventory host to measure (default: server1)")
    parser.add_argument("-n", type=int, default=30, help="timed calls per kind (default: 30)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls per kind first (default: 3)")
    options = parser.parse_args(argv)

    with _inventory_path(options.inventory) as path:
        inventory = Inventory.load([path])
        variables = inventory.host(options.host).variables
        executor = StandardExecutor(inventory)
        host = MultihostHost(options.host, roles=(), domain="default", variables=variables)
        modules = HostModules(host, executor)
        conn = Connection(options.host, variables)
        counter = iter(range(10**9))
        kinds: dict[str, Callable[[], object]] = {
            "raw command `true` (Connection.run)": lambda: conn.run("true"),
            "ansible.builtin.ping": lambda: modules.run("ansible.builtin.ping"),
            "ansible.builtin.command: true": lambda: modules.run("ansible.builtin.command", cmd="true"),
            "ansible.builtin.copy content (changed, diff)": lambda: modules.run(
                "ansible.builtin.copy", dest="/tmp/mhbench-copy", content=f"call {next(counter)}\n"
            ),
            "ansible.builtin.copy content (changed, diff=False)": lambda: modules.run(
                "ansible.builtin.copy", dest="/tmp/mhbench-copy", content=f"call {next(counter)}\n", diff=False
            ),
            "ansible.builtin.service restarted (sysv)": lambda: modules.run(
                "ansible.builtin.service", name=SERVICE, state="restarted"
            ),
        }
        try:
            modules.run("ansible.builtin.copy", dest=f"/etc/init.d/{SERVICE}", content=SCRIPT, mode="0755")
            modules.facts()  # once per host, as HostModules does before the first service call
            times: dict[str, list[float]] = {name: [] for name in kinds}
            for _ in range(options.warmup):
                for call in kinds.values():
                    call()
            for _ in range(options.n):
                for name, call in kinds.items():
                    started = time.perf_counter()
                    call()
                    times[name].append((time.perf_counter() - started) * 1000)
        finally:
            with contextlib.suppress(Exception):
                modules.run("ansible.builtin.service", name=SERVICE, state="stopped")
                modules.run("ansible.builtin.file", path=f"/etc/init.d/{SERVICE}", state="absent")
                modules.run("ansible.builtin.file", path="/tmp/mhbench-copy", state="absent")
            conn.close()
            executor.close()

    raw_median = statistics.median(times["raw command `true` (Connection.run)"])
    print(f"host {options.host}, {options.n} timed calls per kind after {options.warmup} warm-up rounds")
    print(f"{'kind':<50} {'median ms':>10} {'p90 ms':>8} {'x raw':>7}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<50} {median:>10.1f} {_percentile(values, 0.9):>8.1f} {median / raw_median:>7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
