"""Per-operation cost of the bundled utilities (the operation plus its rollback at test end) on a lab host.

Usage::

    python3 bench/utility_ops.py          # brings a one-host lab up and down (root)
    python3 bench/utility_ops.py -n 15

Runs one pytest session with N tests of each kind, interleaved (empty, fs.write, svc.restart,
users.add, backup restore of /etc), reads each test's wall time (setup + call + teardown) from a
JUnit XML report and prints the median per kind minus the empty test's median.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

KINDS = ("empty", "fs_write", "svc_restart", "users_add", "restore_etc")
SUITE = """
import pytest
from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark
from pytest_mh_ansible.backup import DEFAULT_BACKUP_EXCLUDE

ONE = TopologyMark("one", Topology(TopologyDomain("default", server=1)), fixtures=dict(server="default.server[0]"))
SCRIPT = ("#!/bin/sh\\ncase \\"$1\\" in start|restart) touch /run/mhb;; stop) rm -f /run/mhb;; "
          "status) test -e /run/mhb;; esac\\n")






@pytest.mark.topology(ONE)
def test_0_prepare(server):
    server.host.conn.run("cat > /etc/init.d/mhb && chmod 755 /etc/init.d/mhb && service mhb start", input=SCRIPT)
    server.host.conn.run("rm -rf /var/lib/mh-ansible/snapshots/mhb-etc")
    server.host.ansible.run("mh_ansible.rollback.snapshot", paths=["/etc"], name="mhb-etc",
                            exclude=list(DEFAULT_BACKUP_EXCLUDE))


@pytest.mark.parametrize("i", range(N))
@pytest.mark.parametrize("kind", ["empty", "fs_write", "svc_restart", "users_add", "restore_etc"])
@pytest.mark.topology(ONE)
def test_op(server, kind, i):
    if kind == "fs_write":
        server.fs.write("/etc/mh-bench.conf", "x = 1\\n")
    elif kind == "svc_restart":
        server.svc.restart("mhb")
    elif kind == "users_add":
        server.users.add("mhbench")
    elif kind == "restore_etc":
        server.host.ansible.run("mh_ansible.rollback.restore", name="mhb-etc", remove=False)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=11, help="tests per kind (default 11)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mh-utility-bench-") as tmp:
        work = Path(tmp)
        spec = LabSpec(name="mhutilb", hosts=(LabHostSpec("server1", roles=("server",)),))
        with Lab(spec, work / "lab") as lab:
            suite = work / "suite"
            suite.mkdir()
            (suite / "test_ops.py").write_text(SUITE.replace("range(N)", f"range({args.n})"))
            xml = work / "junit.xml"
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "-p",
                    "no:randomly",
                    f"--mh-inventory={lab.inventory_path}",
                    f"--junitxml={xml}",
                    "-o",
                    "junit_duration_report=total",
                    str(suite),
                ],
                cwd=suite,
                check=False,
            )
            times: dict[str, list[float]] = defaultdict(list)
            for case in ET.parse(xml).getroot().iter("testcase"):
                name = case.get("name", "")
                if name.startswith("test_op[") and case.find("failure") is None and case.find("error") is None:
                    kind = next((k for k in KINDS if k in name), None)
                    if kind is not None:
                        times[kind].append(float(case.get("time", "0")))
    base = statistics.median(times["empty"]) if times["empty"] else 0.0
    print(f"{'operation':<14} {'n':>3} {'median test':>12} {'minus empty':>12}")
    for kind in KINDS:
        if times[kind]:
            med = statistics.median(times[kind])
            print(f"{kind:<14} {len(times[kind]):>3} {med * 1000:>9.0f} ms {(med - base) * 1000:>9.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
