"""Wall time of one suite run serially and with ``-n N`` over N host sets (the host pools).

Brings up a sysv lab of N host sets (``clientK`` + ``serverK``), writes a suite of T tests of one
topology (client=1, server=1; each test runs two commands and one module call with its rollback),
and runs it, alternating in each round: serially (``-p no:xdist``) and with ``-n N`` (the pool
scheduler). It reports the medians and their ratio and writes every sample as JSON.

This measures this project against itself only; the comparison with pytest-mh on 9 systemd hosts
that issue #16 asks for is not here (see bench/README.md).

    sudo .venv/bin/python bench/pools.py --sets 2 --tests 40 --rounds 3 --json bench/pools-2sets.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

SUITE = textwrap.dedent("""
    import pytest
    from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

    PAIR = TopologyMark("pair", Topology(TopologyDomain("app", client=1, server=1)),
                        fixtures=dict(client="app.client[0]", server="app.server[0]"))

    @pytest.mark.topology(PAIR)
    @pytest.mark.parametrize("n", range({tests}))
    def test_pair(client, server, n):
        assert client.host.conn.run(f"echo {{n}}").stdout == f"{{n}}\\n"
        server.host.ansible.run("ansible.builtin.copy", dest="/etc/bench-pools.conf", content=f"{{n}}\\n")
        assert server.host.conn.run("cat /etc/bench-pools.conf").stdout == f"{{n}}\\n"
""")


def _run(args: list[str], cwd: Path) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"run failed ({' '.join(args)}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return elapsed, done.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", type=int, default=2, help="host sets (and workers), default 2")
    parser.add_argument("--tests", type=int, default=40, help="tests in the suite, default 40")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (one serial and one parallel run each)")
    parser.add_argument("--json", type=Path, help="write the samples here")
    parser.add_argument("--lab-name", default="mhbpools" + os.environ.get("MH_TEST_LAB_SUFFIX", ""))
    opts = parser.parse_args()
    hosts = [LabHostSpec(f"client{i}", roles=("client",)) for i in range(1, opts.sets + 1)]
    hosts += [LabHostSpec(f"server{i}", roles=("server",)) for i in range(1, opts.sets + 1)]
    samples: dict[str, list[float]] = {"serial": [], "parallel": []}
    with tempfile.TemporaryDirectory(prefix="mhbp-") as tmp:
        work = Path(tmp)
        (work / "test_suite.py").write_text(SUITE.format(tests=opts.tests))
        (work / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider -p no:benchmark\n")
        with Lab(LabSpec(name=opts.lab_name, hosts=tuple(hosts)), work / "lab") as lab:
            base = [sys.executable, "-m", "pytest", "-q", "-i", str(lab.inventory_path), "-o", "mh_default_domain=app"]
            variants = {"serial": [*base, "-p", "no:xdist"], "parallel": [*base, "-p", "xdist", "-n", str(opts.sets)]}
            _run(variants["serial"] + ["-x", "-k", "pair-0"], work)  # warm-up: connections, caches
            for number in range(opts.rounds):
                order = ["serial", "parallel"] if number % 2 == 0 else ["parallel", "serial"]
                for name in order:
                    elapsed, summary = _run(variants[name], work)
                    samples[name].append(elapsed)
                    print(f"round {number + 1}: {name:8s} {elapsed:6.1f} s  ({summary})", flush=True)
    serial, parallel = statistics.median(samples["serial"]), statistics.median(samples["parallel"])
    result = {
        "sets": opts.sets,
        "workers": opts.sets,
        "tests": opts.tests,
        "rounds": opts.rounds,
        "samples_s": samples,
        "median_s": {"serial": serial, "parallel": parallel},
        "ratio_parallel_to_serial": parallel / serial,
        "machine": {"cpus": os.cpu_count(), "load_avg_at_end": os.getloadavg(), "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(f"median serial {serial:.1f} s, -n {opts.sets} {parallel:.1f} s: ratio {parallel / serial:.2f}")
    if opts.json:
        opts.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
