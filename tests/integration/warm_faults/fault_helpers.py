"""Ways into the warm fault tests' lab host that do not go over ssh."""

from __future__ import annotations

import subprocess

from pytest_mh_ansible.lab import Lab


def on_host(lab: Lab, command: str) -> subprocess.CompletedProcess[str]:
    """Run a shell command inside the lab host (entering its namespaces), not over ssh."""
    pid = next(h.pid for h in lab.hosts if h.name == "server1")
    assert pid is not None, "lab host server1 is not running"
    return subprocess.run(
        ["nsenter", "-t", str(pid), "-a", "/bin/sh", "-c", command],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def agent_pids(lab: Lab) -> list[int]:
    """PIDs of warm agents (and their module children) on the host."""
    found = on_host(lab, "pgrep -f 'mh-warm-[a]gent' || true")
    return sorted(int(pid) for pid in found.stdout.split())
