"""Hosts: the client detects features once per session; the server is a backup host."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from pytest_mh import MultihostBackupHost, MultihostHost

APP_DIR = "/etc/mhcompat"
APP_CONF = f"{APP_DIR}/app.conf"


class ClientHost(MultihostHost[Any]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.features: dict[str, bool] = {}

    def pytest_setup(self) -> None:
        super().pytest_setup()
        for tool in ("bash", "expect"):
            self.features[tool] = self.conn.run(f"command -v {tool}", raise_on_error=False).rc == 0


class ServerHost(MultihostBackupHost[Any]):
    """Its application directory is backed up once and restored after every test."""

    def start(self) -> None:
        self.conn.run(f"mkdir -p {APP_DIR} && printf 'port = 80\\n' > {APP_CONF}")

    def stop(self) -> None:
        pass

    def backup(self) -> Any:
        path = self.conn.run("mktemp -d /tmp/mhcompat.backup.XXXXXXXX").stdout.strip()
        self.conn.run(f"cp -a {APP_DIR}/. {path}/")
        return PurePosixPath(path)

    def restore(self, backup_data: Any) -> None:
        if backup_data is None:
            return
        self.conn.run(f"rm -rf {APP_DIR} && mkdir -p {APP_DIR} && cp -a {backup_data}/. {APP_DIR}/")

    def pytest_teardown(self) -> None:
        super().pytest_teardown()
        self.conn.run(f"rm -rf {APP_DIR}")
