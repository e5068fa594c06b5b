"""The soak's short profile, as CI runs it: every fault kind once, and the hosts exactly as before.

A lab of its own (two sysv hosts, one systemd host), nine generated tests that make the 27 kinds of
change (every bundled utility and raw module calls; the package install is left to the full profile
and the engine's integration tests), each meeting one fault: a failing body, a failing setup,
SIGINT, SIGTERM and SIGHUP (each followed by a resumed run), sshd killed and restarted, a command
past its own timeout, a test past its mh_timeout, a full /tmp. See docs/soak.md.
"""

from __future__ import annotations

import os

import pytest

from .driver import run_soak
from .plan import FAULTS, PROFILES

pytestmark = pytest.mark.integration


def test_short_profile__every_fault_happens_and_every_host_is_as_before(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    if os.geteuid() != 0:
        pytest.skip("the lab needs root (network namespaces, mounts, veths)")
    workdir = tmp_path_factory.mktemp("soak")
    result = run_soak("short", workdir, json_path=workdir / "soak.json")
    assert result["tests_run"] == result["tests"] == len(FAULTS)
    # each scheduled fault really happened (seen from the test, its report or pytest's exit)
    assert result["faults_missing"] == []
    assert result["faults_observed"] == dict.fromkeys(FAULTS, 1)
    assert result["pytest_runs"] == 4  # the first run and one resumed run after each signal
    # every change kind was made
    assert set(result["changes_by_kind"]) == set(PROFILES["short"].changes)
    assert result["changes"] >= len(PROFILES["short"].changes)
    # nothing failed but the scheduled failures; no drift; nothing left on a host
    assert result["unexpected_failures"] == []
    assert result["drift_reports"] == []
    assert result["not_reverted_host_dead"] == []
    assert result["not_reverted_rollback_failed"] == []
    assert result["hosts_not_restored"] == {}
    assert result["fingerprint_entries"]["sysv1"] > 1000  # /etc alone has more: the fingerprint saw the host
