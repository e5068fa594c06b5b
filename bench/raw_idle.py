"""Where a raw command's time goes after an idle gap: ``Connection.run`` against a bare ``ssh`` over a ControlMaster.

Usage (root: it brings up a one-host lab ``mhidle``)::

    python3 bench/raw_idle.py            # prints the medians, writes bench/results/raw-idle-<time>.json

Each kind is timed back to back and after 0.1 s and 1 s of idle: ``Connection.run("true")`` through
the warm agent's open channel (the default of a session), ``Connection.run("true")`` with an ssh
client per command (the ssh connection plugin over its ControlMaster: hosts on the standard
executor), the ``ssh`` client alone over a
ControlMaster of its own (the OpenSSH part of the cost) and ``/bin/true`` through ``subprocess``
(starting a process on the controller). A difference that grows with the gap for the first kind but
not for the second is spent in the controller's Python, not in ssh or on the target.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pytest_mh_ansible._private.ansible.inventory import Inventory
from pytest_mh_ansible._private.ansible.transport import AnsibleTransport
from pytest_mh_ansible.conn import Connection
from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare import RESULTS, git_commit

GAPS = (0.0, 0.1, 1.0)


def main() -> int:
    spec = LabSpec(name="mhidle", hosts=(LabHostSpec("server1", roles=("server",)),))
    samples: dict[str, dict[str, list[float]]] = {}
    load_before = list(os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="mhidle-") as tmp, Lab(spec, Path(tmp) / "lab") as lab:
        variables = Inventory.load([str(lab.inventory_path)]).host("server1").variables
        conn = Connection("server1", variables)
        agent = Connection("server1", variables, transport=AnsibleTransport("server1", variables, command_agent=True))
        for _ in range(10):
            conn.run("true")
            agent.run("true")
        config, path = str(lab.ssh_config_path), f"{tmp}/cm"
        ssh = ["ssh", "-F", config, "-o", f"ControlPath={path}"]
        subprocess.run([*ssh, "-o", "ControlMaster=yes", "-o", "ControlPersist=120", "-fN", "server1"], check=True)
        kinds: dict[str, Callable[[], object]] = {
            "Connection.run through the agent (default)": lambda: agent.run("true"),
            "Connection.run, an ssh client per command": lambda: conn.run("true"),
            "bare ssh over a ControlMaster": lambda: subprocess.run(
                [*ssh, "server1", "true"], check=True, stdin=subprocess.DEVNULL
            ),
            "local /bin/true through subprocess": lambda: subprocess.run(["/bin/true"], check=True),
        }
        try:
            for gap in GAPS:
                for name, call in kinds.items():  # the kinds interleave per gap: load hits them alike
                    times = samples.setdefault(name, {}).setdefault(str(gap), [])
                    for _ in range(20 if gap < 1 else 8):
                        time.sleep(gap)
                        start = time.perf_counter()
                        call()
                        times.append((time.perf_counter() - start) * 1000)
        finally:
            subprocess.run([*ssh, "-O", "exit", "server1"], capture_output=True, check=False)
            conn.close()
            agent.close()
    medians = {name: {gap: statistics.median(v) for gap, v in by_gap.items()} for name, by_gap in samples.items()}
    for name, by_gap in medians.items():
        print(f"{name:44s} " + "  ".join(f"gap {gap} s: {ms:5.1f} ms" for gap, ms in by_gap.items()))
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = RESULTS / f"raw-idle-{stamp}.json"
    config_data = {
        "date_utc": stamp,
        "commit": git_commit(),
        "loadavg_before": load_before,
        "loadavg_after": list(os.getloadavg()),
    }
    out.write_text(json.dumps({"config": config_data, "medians_ms": medians, "samples_ms": samples}, indent=1) + "\n")
    print(f"JSON written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
