"""An audit of a 300-test ``-n 4`` run on lab hosts: every command's worker and host, and no host shared.

The project's conftest.py records every command the plugin runs (the ``pytest_mh_ansible.conn``
logger's line: host, duration) with the worker that ran it and when it ended; the test then checks,
host by host, that no two workers' commands overlapped in time.
"""

from __future__ import annotations

import json
import textwrap
from collections import defaultdict

import pytest

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

RECORDER = textwrap.dedent("""
    import json, logging, os, time

    class Recorder(logging.Handler):
        def emit(self, record):
            # conn.py: "%s: %s -> rc=%d in %.3f s" (host, command, rc, seconds)
            if not record.msg.endswith("-> rc=%d in %.3f s"):
                return
            host, command, rc, seconds = record.args
            end = record.created
            line = {"worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "host": host,
                    "command": command, "start": end - seconds, "end": end}
            with open(os.path.join(os.environ["AUDIT_DIR"], "commands.jsonl"), "a") as handle:
                handle.write(json.dumps(line) + "\\n")

    def pytest_configure(config):
        logger = logging.getLogger("pytest_mh_ansible.conn")
        logger.setLevel(logging.DEBUG)
        logger.addHandler(Recorder())
""")

SUITE = textwrap.dedent("""
    import pytest
    from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

    PAIR = TopologyMark("pair", Topology(TopologyDomain("app", client=1, server=1)),
                        fixtures=dict(client="app.client[0]", server="app.server[0]"))
    CLIENT = TopologyMark("client", Topology(TopologyDomain("app", client=1)), fixtures=dict(client="app.client[0]"))
    SERVER = TopologyMark("server", Topology(TopologyDomain("app", server=1)), fixtures=dict(server="app.server[0]"))

    @pytest.mark.topology([PAIR, CLIENT])
    @pytest.mark.parametrize("n", range(100))
    def test_client(client, n):
        assert client.host.conn.run(f"echo {n}").stdout == f"{n}\\n"

    @pytest.mark.topology(SERVER)
    @pytest.mark.parametrize("n", range(100))
    def test_server(server, n):
        assert server.host.conn.run(f"echo {n}").stdout == f"{n}\\n"
""")


def test_audit_lab__300_tests_on_4_workers_never_share_a_host(
    pytester: pytest.Pytester, pool_lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(RECORDER)
    pytester.makepyfile(test_suite=SUITE)
    monkeypatch.setenv("AUDIT_DIR", str(pytester.path))
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-i", str(pool_lab.inventory_path), "-o", "mh_default_domain=app",
        "-p", "xdist", "-n", "4", "-p", "no:benchmark",
    )  # fmt: skip
    result.assert_outcomes(passed=300)
    commands = [json.loads(line) for line in (pytester.path / "commands.jsonl").read_text().splitlines()]
    assert sum(1 for c in commands if c["command"].startswith("echo ")) == 300
    by_host: dict[str, list[dict[str, object]]] = defaultdict(list)
    for command in commands:
        by_host[command["host"]].append(command)
    shared = []
    for host, used in by_host.items():
        used.sort(key=lambda c: c["start"])  # type: ignore[arg-type, return-value]
        busy_until: dict[str, float] = {}
        for command in used:
            for worker, until in busy_until.items():
                if worker != command["worker"] and command["start"] < until:  # type: ignore[operator]
                    shared.append(f"{host}: {worker} and {command['worker']} at {command['start']}")
            busy_until[str(command["worker"])] = max(busy_until.get(str(command["worker"]), 0.0), command["end"])  # type: ignore[arg-type, call-overload]
    assert shared == []
    # Several workers ran tests, on all four hosts. (While "pair" holds two of the four hosts, a
    # fourth worker finds no free host for any topology and waits: at least three workers work.)
    assert len({c["worker"] for c in commands}) >= 3
    assert set(by_host) == {"client1", "client2", "server1", "server2"}
