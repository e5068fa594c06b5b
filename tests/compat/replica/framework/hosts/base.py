"""Hosts whose replica configuration and account files are saved at start and put back by the topology."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from pytest_mh import MultihostBackupHost

CONF_DIR = "/etc/replica"
# useradd and userdel rewrite these (and leave their '-' copies changed): saved with the configuration.
ACCOUNT_FILES = ("passwd", "shadow", "group", "gshadow", "subuid", "subgid")


class BaseReplicaHost(MultihostBackupHost[Any]):
    """A backup host; the topology controller restores it after each test, not the host itself."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, auto_restore=False, **kwargs)
        self.features: dict[str, bool] = {}

    def pytest_setup(self) -> None:
        super().pytest_setup()
        found = self.conn.run("for t in python3 bash getent; do command -v $t >/dev/null && echo $t; done")
        self.features = dict.fromkeys(found.stdout_lines, True)

    def start(self) -> None:
        self.conn.run(f"mkdir -p {CONF_DIR}")

    def stop(self) -> None:
        raise NotImplementedError("the replica hosts run nothing between tests")

    def backup(self) -> Any:
        names = " ".join(f"{n} {n}-" for n in ACCOUNT_FILES)
        script = (
            "set -e; d=$(mktemp -d /tmp/replica.backup.XXXXXXXX); cd /etc;"
            f" for f in {names}; do [ -e $f ] && echo $f; done > $d/files;"
            f" tar -cpf $d/etc.tar replica $(cat $d/files); echo $d"
        )
        return PurePosixPath(self.conn.run(script).stdout.strip())

    def restore(self, backup_data: Any | None) -> None:
        if backup_data is None:
            return
        names = " ".join(f"{n} {n}-" for n in ACCOUNT_FILES)
        self.conn.run(
            f"set -e; cd /etc; for f in {names}; do grep -qx $f {backup_data}/files || rm -f $f; done;"
            f" rm -rf replica; tar -xpf {backup_data}/etc.tar"
        )

    def pytest_teardown(self) -> None:
        super().pytest_teardown()
        self.conn.run(f"rm -rf {CONF_DIR}")
