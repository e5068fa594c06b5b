"""Ctrl-C during a ``-n 2`` run on lab hosts: every worker rolls back its own hosts and gives its leases back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

LONG_TESTS = textwrap.dedent("""
    import os, time
    from pathlib import Path
    import pytest
    from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

    PAIR = TopologyMark("pair", Topology(TopologyDomain("app", client=1, server=1)),
                        fixtures=dict(client="app.client[0]", server="app.server[0]"))

    @pytest.mark.topology(PAIR)
    @pytest.mark.parametrize("n", range(4))
    def test_long(client, server, n):
        for host in (client.host, server.host):
            host.ansible.run("ansible.builtin.copy", dest="/etc/mh-interrupt.conf", content="changed\\n")
        Path(__file__).with_name("running-" + os.environ["PYTEST_XDIST_WORKER"]).write_text("yes")
        time.sleep(120)
""")

HOSTS = ("client1", "client2", "server1", "server2")


def test_interrupt_lab__ctrl_c_with_two_workers_rolls_back_and_releases_leases(
    pytester: pytest.Pytester, pool_lab: Lab
) -> None:
    pytester.makepyfile(test_long=LONG_TESTS)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:benchmark",
           "-i", str(pool_lab.inventory_path), "-o", "mh_default_domain=app", "-p", "xdist", "-n", "2"]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    started = time.monotonic()
    try:
        while not all((pytester.path / f"running-gw{i}").exists() for i in (0, 1)):
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() - started < 120, "the workers never started their tests"
            time.sleep(0.2)
        for name in HOSTS:  # both host sets are in use, each with its lease
            assert pool_lab.run_inside(name, "cat /etc/mh-interrupt.conf").stdout == "changed\n"
            assert pool_lab.run_inside(name, "ls /tmp/pytest-mh-ansible-leases").stdout.split() == [name]
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground process group
        output, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    (pytester.path / "output.txt").write_text(output)
    assert proc.returncode == 2, output
    assert "pytest-mh-ansible: SIGINT received: passed on to the workers (gw0, gw1)" in output, output
    for name in HOSTS:
        assert pool_lab.run_inside(name, "test -e /etc/mh-interrupt.conf").returncode == 1, (name, output[-3000:])
        assert pool_lab.run_inside(name, "ls -A /tmp/pytest-mh-ansible-leases").stdout.split() == [], (name, output)
