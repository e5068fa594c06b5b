"""The suite that test_utils_core.py runs to check MultihostBackupHost (not collected)."""

from __future__ import annotations

import pytest

from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark
from pytest_mh_ansible.backup import MultihostBackupHost

SYSV = TopologyMark("sysv", Topology(TopologyDomain("default", server=1)), fixtures=dict(server="default.server[0]"))


class ServerHost(MultihostBackupHost):
    backup_paths = ("/etc", "/root")


def pytest_mh_register(registry):
    registry.host("server", ServerHost)


@pytest.mark.topology(SYSV)
def test_1_raw_changes(server):
    server.host.conn.run("echo raw > /etc/mh-raw && echo junk >> /etc/hosts && rm -f /etc/motd")


@pytest.mark.topology(SYSV)
def test_2_restored(server):
    out = server.host.conn.run("test -e /etc/mh-raw; echo $?; grep -c junk /etc/hosts; test -e /etc/motd; echo $?")
    assert out.stdout.split() == ["1", "0", "0"]


@pytest.mark.topology(SYSV)
def test_3_session_snapshot_exists_during_the_run(server):
    manifest = "/var/lib/mh-ansible/snapshots/mh-host-backup/manifest.json"
    assert server.host.conn.run(f"test -f {manifest}", raise_on_error=False).rc == 0
