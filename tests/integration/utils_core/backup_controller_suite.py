"""The suite that test_utils_core.py runs to check BackupTopologyController (not collected)."""

from __future__ import annotations

import pytest

from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark
from pytest_mh_ansible.backup import BackupTopologyController, MultihostBackupHost

SNAPSHOT = "/var/lib/mh-ansible/snapshots/mh-topology-backup-prepared"
PREPARED = "/etc/mh-prepared"


class ServerHost(MultihostBackupHost):
    backup_paths = ("/etc", "/root")
    auto_restore = False  # the controller restores, to its own snapshot


def pytest_mh_register(registry):
    registry.host("server", ServerHost)


class PreparingController(BackupTopologyController):
    def topology_setup(self, **hosts):
        hosts["server"].conn.run(f"echo prepared > {PREPARED}")  # a raw change: only the snapshot has it
        super().topology_setup(**hosts)

    def topology_teardown(self, **hosts):
        try:
            super().topology_teardown(**hosts)
        finally:
            hosts["server"].conn.run(f"rm -f {PREPARED}")


PREPARED_TOPOLOGY = TopologyMark(
    "prepared",
    Topology(TopologyDomain("default", server=1)),
    controller=PreparingController(),
    fixtures=dict(server="default.server[0]"),
)


@pytest.mark.topology(PREPARED_TOPOLOGY)
def test_1_raw_changes(server):
    assert server.host.conn.run(f"cat {PREPARED}").stdout == "prepared\n"
    assert server.host.conn.run(f"test -f {SNAPSHOT}/manifest.json", raise_on_error=False).rc == 0
    server.host.conn.run(
        f"echo raw > /etc/mh-raw && echo junk >> /etc/hosts && rm -f /etc/motd && echo changed > {PREPARED}"
    )


@pytest.mark.topology(PREPARED_TOPOLOGY)
def test_2_restored_to_the_topology_snapshot(server):
    out = server.host.conn.run("test -e /etc/mh-raw; echo $?; grep -c junk /etc/hosts; test -e /etc/motd; echo $?")
    assert out.stdout.split() == ["1", "0", "0"]
    assert server.host.conn.run(f"cat {PREPARED}").stdout == "prepared\n"
