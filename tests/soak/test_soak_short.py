"""The soak's short profile, as CI runs it: every fault kind once, and the hosts exactly as before.

A lab of its own (two sysv hosts, one systemd host), nine generated tests that make the 40 kinds of
change (every bundled utility, raw module calls, and changes of pre-existing objects in unusual states;
the package changes are left to the full profile, the engine's integration tests and the state suite),
each meeting one fault: a failing body, a failing setup,
SIGINT, SIGTERM and SIGHUP (each followed by a resumed run), sshd killed and restarted, a command
past its own timeout, a test past its mh_timeout, a full /tmp. See docs/soak.md.
"""

from __future__ import annotations

import json
import os

import pytest

from .driver import run_soak
from .plan import FAULTS, PROFILES, SIGNAL_FAULTS, make_plan

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
    # the first run, and one resumed run after each signal but one that met the last test
    tests = make_plan(PROFILES["short"])["tests"]
    resumed = sum(1 for test in tests[:-1] if test["fault"] in SIGNAL_FAULTS)
    assert result["pytest_runs"] == 1 + resumed
    # every change kind was made
    assert set(result["changes_by_kind"]) == set(PROFILES["short"].changes)
    assert result["changes"] >= len(PROFILES["short"].changes)
    # nothing failed but the scheduled failures; no drift; nothing left on a host
    assert result["unexpected_failures"] == []
    assert result["drift_reports"] == []
    assert result["not_reverted_host_dead"] == []
    assert result["not_reverted_rollback_failed"] == []
    assert result["hosts_not_restored"] == {}
    assert result["tool_traces_left"] == {}  # no snapshot, journal or lease left on a host
    # the fingerprint read the objects in unusual states, the wider trees, ACLs and xattrs
    before = json.loads((workdir / "fingerprints-before.json").read_text())
    for host, entries in before.items():
        assert "states: hard links: 1 inode(s)" in entries, host
        assert "acl: user:65534:r--" in entries, host  # /srv/mhsoak/acl.conf's entry for nobody
        assert 'xattr: user.mh="kept"' in entries, host
        assert any(entry.startswith("paths: /var/lib/dpkg/status ") for entry in entries), host
        assert any(entry.startswith("accounts: passwd mhslegacy:") for entry in entries), host
        assert not any(entry.startswith("accounts: shadow mhslegacy:") for entry in entries), host
    assert result["fingerprint_entries"]["sysv1"] > 5000  # /etc and /var/lib alone have more: it saw the host
