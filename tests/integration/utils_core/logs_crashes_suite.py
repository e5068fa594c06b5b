"""The suite that test_utils_core.py runs (with ``mh_crashes = fail``) to check logs and crashes (not collected)."""

from __future__ import annotations

import time

import pytest

from pytest_mh_ansible import MultihostError, Topology, TopologyDomain, TopologyMark
from pytest_mh_ansible.utils.crashes import core_locations

BOTH = TopologyMark(
    "both",
    Topology(TopologyDomain("default", server=2)),
    fixtures=dict(sysv="default.server[0]", sd="default.server[1]"),
)
LOG = "/var/log/mh-app.log"  # kept for the session (outside the journal); test_04 removes it
MISSING = "/var/log/mh-missing.log"
CORE = {}


def journal_has(role, text, timeout=10.0):
    """Whether the journal since the test started shows ``text`` (journald may take a moment)."""
    deadline = time.monotonic() + timeout
    while True:
        if text in role.logs.journal():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)


@pytest.mark.topology(BOTH)
def test_00_prepare(sysv, sd):
    sysv.host.conn.run(f"echo before > {LOG}")
    sysv.logs.follow(LOG)
    mode, _, glob = core_locations(sysv.host.conn.run("cat /proc/sys/kernel/core_pattern").stdout)
    if mode == "unavailable":
        pytest.skip("kernel.core_pattern pipes cores to a handler the crashes utility cannot read")
    # A fake core, named as kernel.core_pattern names cores, in a directory the crash check searches.
    sysv.crashes.search_dirs.append("/var/tmp")
    CORE["path"] = "/var/tmp/" + glob.rstrip("*") + "mh-fake"
    assert sysv.logs.file(LOG) == ""  # followed since before this test: nothing new
    assert sysv.crashes.check() == []
    assert sd.crashes.check() == []


@pytest.fixture
def failing_logs(sysv, sd):
    sysv.host.conn.run(f"echo from-fixture >> {LOG}")
    assert sysv.logs.file(LOG) == "from-fixture\n"
    sd.host.conn.run("logger -t mh-test mh-fixture-marker")
    assert journal_has(sd, "mh-fixture-marker")
    assert sysv.crashes.check() == []
    assert sd.crashes.check() == []
    raise RuntimeError("the fixture fails after reading logs and crashes")


@pytest.mark.topology(BOTH)
def test_01_failing_setup(sysv, sd, failing_logs):
    pass


@pytest.mark.topology(BOTH)
def test_02_after_failing_setup(sysv, sd):
    sysv.host.conn.run(f"echo second >> {LOG}")
    assert sysv.logs.file(LOG) == "second\n"
    sd.host.conn.run("logger -t mh-test mh-second-marker")
    assert journal_has(sd, "mh-second-marker")
    assert "mh-fixture-marker" not in sd.logs.journal()
    assert "mh-fixture-marker" in sd.logs.journal(since_test_start=False)
    assert sysv.crashes.check() == []
    assert sd.crashes.check() == []


@pytest.mark.topology(BOTH)
def test_03_failing_body(sysv, sd):
    sysv.host.conn.run(f"echo third >> {LOG}")
    assert sysv.logs.file(LOG) == "third\n"
    with pytest.raises(MultihostError, match="no journald"):
        sysv.logs.journal()
    sd.host.conn.run("logger -t mh-test mh-body-marker")
    assert journal_has(sd, "mh-body-marker")
    sysv.host.conn.run(f"echo core > {CORE['path']}")  # raw: still there in test_04
    assert [crash.detail for crash in sysv.crashes.check()] == [CORE["path"]]
    assert sd.crashes.check() == []
    sysv.logs.file(MISSING)  # raises: the test fails, and the crash check reports the core


@pytest.mark.topology(BOTH)
def test_04_after_failing_body(sysv, sd):
    try:
        assert sysv.host.conn.run(f"test -f {CORE['path']}", raise_on_error=False).rc == 0
        assert sysv.crashes.check() == []  # the core is older than this test
        assert sd.crashes.check() == []
        assert "mh-body-marker" not in sd.logs.journal()
        sysv.host.conn.run(f"echo fourth >> {LOG}")
        assert sysv.logs.file(LOG) == "fourth\n"
        assert sysv.logs.file(LOG, since_test_start=False) == "before\nfrom-fixture\nsecond\nthird\nfourth\n"
        with pytest.raises(MultihostError, match="cannot read log file"):
            sysv.logs.file(MISSING)  # followed since test_03, marked "missing" before every test since
    finally:
        sysv.host.conn.run(f"rm -f {LOG} {CORE['path']}")
