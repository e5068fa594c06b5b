"""The backup-host contract (pytest-mh's): what ``backup()`` returns goes back to ``restore`` and ``remove_backup``."""

from __future__ import annotations

from typing import Any

from pytest_mh_ansible import BackupTopologyController, MultihostBackupHost


class _DumpHost(MultihostBackupHost):
    """Backs up its own way, as a pytest-mh framework does: no name, data of its own."""

    def __init__(self, name: str) -> None:
        super().__init__(name, roles=("server",), domain="app", variables={})
        self.calls: list[tuple[str, Any]] = []
        self.count = 0

    def backup(self) -> Any:  # type: ignore[override]
        self.count += 1
        data = {"dump": f"/tmp/dump{self.count}"}
        self.calls.append(("backup", None))
        return data

    def restore(self, backup_data: Any) -> None:
        self.calls.append(("restore", backup_data))

    def remove_backup(self, backup_data: Any) -> None:
        self.calls.append(("remove_backup", backup_data))


def test_backup__data_from_backup_goes_to_restore_and_remove_backup() -> None:
    host = _DumpHost("server1")
    host.pytest_setup()
    host.teardown()
    host.teardown()
    host.pytest_teardown()
    first = {"dump": "/tmp/dump1"}
    assert host.calls == [("backup", None), ("restore", first), ("restore", first), ("remove_backup", first)]
    assert host.backup_data is None


def test_backup__no_restore_without_auto_restore() -> None:
    class Quiet(_DumpHost):
        auto_restore = False

    host = Quiet("server1")
    host.pytest_setup()
    host.teardown()
    assert [call for call, _ in host.calls] == ["backup"]


def test_backup__topology_controller_calls_a_backup_without_a_name_and_passes_its_data_back() -> None:
    host = _DumpHost("server1")
    controller = BackupTopologyController()
    controller.topology_setup(server=host)
    controller.teardown(server=host)
    controller.topology_teardown(server=host)
    topology_data = {"dump": "/tmp/dump1"}
    assert host.calls == [("backup", None), ("restore", topology_data), ("remove_backup", topology_data)]
    assert controller.backup_data == {}
