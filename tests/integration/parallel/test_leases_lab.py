"""Leases on real lab hosts: two sessions with different controller ids never use one host at once.

Each session gets its own TMPDIR, so that the per-host flock on this machine does not keep them
apart: only the leases on the hosts do, as for two controllers on two machines.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

LEASE_TEST = textwrap.dedent("""
    import json, os, time
    import pytest
    from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

    PAIR = TopologyMark("pair", Topology(TopologyDomain("app", client=1, server=1)),
                        fixtures=dict(client="app.client[0]", server="app.server[0]"))

    @pytest.mark.topology(PAIR)
    @pytest.mark.parametrize("n", range(3))
    def test_exclusive(server, n):
        start = time.time()
        server.host.conn.run("mkdir /tmp/mh-lease-inuse")  # fails if the other session is inside the host
        time.sleep(float(os.environ.get("HOLD", "0.4")))
        server.host.conn.run("rmdir /tmp/mh-lease-inuse")
        with open(os.environ["USES"], "a") as handle:
            handle.write(json.dumps({"session": os.environ["SESSION"], "start": start, "end": time.time()}) + "\\n")
""")


_TMPDIRS: list[str] = []


@pytest.fixture(autouse=True)
def _clean_tmpdirs() -> Iterator[None]:
    yield
    while _TMPDIRS:
        shutil.rmtree(_TMPDIRS.pop(), ignore_errors=True)


def _session(path: Path, lab: Lab, name: str, *args: str, hold: float = 0.4) -> subprocess.Popen[str]:
    # Short: ssh's ControlPath, under TMPDIR, must stay below 108 bytes.
    tmp = tempfile.mkdtemp(prefix=f"mh-{name}-", dir="/tmp")
    _TMPDIRS.append(tmp)
    env = {**os.environ, "TMPDIR": tmp, "SESSION": name, "USES": str(path / "uses.jsonl"), "HOLD": str(hold)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:benchmark",
               "-i", str(lab.inventory_path), "-o", "mh_default_domain=app", "--mh-limit", "client1,server1",
               "--mh-controller-id", name, "test_lease.py", *args]  # fmt: skip
    return subprocess.Popen(
        command, cwd=path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )


def test_leases_lab__two_controllers_take_turns_on_one_host(pytester: pytest.Pytester, pool_lab: Lab) -> None:
    pytester.makepyfile(test_lease=LEASE_TEST)
    first = _session(pytester.path, pool_lab, "ctl-a")
    second = _session(pytester.path, pool_lab, "ctl-b")
    outputs = [proc.communicate(timeout=300)[0] for proc in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], "\n".join(outputs)
    uses = [json.loads(line) for line in (pytester.path / "uses.jsonl").read_text().splitlines()]
    assert len(uses) == 6
    overlaps = [
        (a, b)
        for a in uses
        for b in uses
        if a["session"] != b["session"] and a["start"] < b["end"] and b["start"] < a["end"]
    ]
    assert overlaps == []


def test_leases_lab__a_killed_sessions_lease_expires(pytester: pytest.Pytester, pool_lab: Lab) -> None:
    pytester.makepyfile(test_lease=LEASE_TEST)
    holder = _session(pytester.path, pool_lab, "ctl-a", "--mh-lease-ttl", "4", hold=300)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the holder is inside its first test: it holds the lease
            if pool_lab.run_inside("server1", "test -d /tmp/mh-lease-inuse").returncode == 0:
                break
            time.sleep(0.5)
        else:
            pytest.fail("the first session never started its test")
        # While the holder lives, another controller gives up with an error that names it.
        waiting = _session(pytester.path, pool_lab, "ctl-b", "--mh-lease-timeout", "2")
        out = waiting.communicate(timeout=120)[0]
        assert waiting.returncode != 0
        assert "host 'client1' is leased by 'ctl-a/" in out or "host 'server1' is leased by 'ctl-a/" in out, out
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.communicate(timeout=60)
    assert pool_lab.run_inside("server1", "rmdir /tmp/mh-lease-inuse").returncode == 0
    started = time.monotonic()
    after = _session(pytester.path, pool_lab, "ctl-b", "--mh-lease-timeout", "60")
    out = after.communicate(timeout=120)[0]
    assert after.returncode == 0, out
    assert "3 passed" in out
    # It waited for the dead session's lease to expire (ttl 4 s), not longer than the timeout.
    assert time.monotonic() - started < 60
