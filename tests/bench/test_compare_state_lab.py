"""The compare bench's host-state check on a real lab host: a change left behind is named, its undo passes.

bench/compare.py fingerprints its hosts after every run and stops on a drift; this checks on one
systemd lab host that a file, a user (with its home and shadow-utils' backups) and a stopped service
left behind are each named, and that once they are undone the host compares equal to the start again.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from compare_lab import bench_lab
from compare_state import HostState, StateDrift

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="the bench brings up a lab (root only)"),
]


def test_host_state__names_what_a_run_left_and_passes_once_it_is_undone() -> None:
    name = "mhbstate" + os.environ.get("MH_TEST_LAB_SUFFIX", "")
    with bench_lab(name, reuse=False, hosts={"server1": "server"}, cache_package=False) as blab:
        state = HostState.take(blab)
        state.check("before any change")
        blab.ssh(
            "server1",
            "useradd --create-home bldrift && printf 'x\\n' > /etc/bl-drift.conf && systemctl stop blsvc.service",
        )
        with pytest.raises(StateDrift) as caught:
            state.check("round 1/1, ops run of a careless tool")
        drift = caught.value.drift["server1"]
        assert "+/etc/bl-drift.conf 2 644 root" in drift
        assert "+left /home/bldrift 755 bldrift" in drift
        assert any(line.startswith("+/etc/passwd ") for line in drift)
        assert "+unit blsvc.service inactive disabled" in drift
        assert str(caught.value).startswith("round 1/1, ops run of a careless tool: the hosts are not as before")

        blab.ssh("server1", "userdel --remove bldrift && rm /etc/bl-drift.conf && systemctl start blsvc.service")
        state.check("after the undo")  # shadow-utils' backups now hold bldrift: settled, not a drift
        assert state.checks == 3
