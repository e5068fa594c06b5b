"""A way into the warm fault tests' lab host that does not go over ssh."""

from __future__ import annotations

from pytest_mh_ansible.lab import Lab


def agent_pids(lab: Lab) -> list[int]:
    """PIDs of warm agents (and their module children) on the host."""
    found = lab.run_inside("server1", "pgrep -f 'mh-warm-[a]gent' || true")
    return sorted(int(pid) for pid in found.stdout.split())
