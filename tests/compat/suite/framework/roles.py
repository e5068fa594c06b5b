"""Roles: what the tests get as fixtures."""

from __future__ import annotations

from typing import Any

from pytest_mh import MultihostRole
from pytest_mh.utils.fs import LinuxFileSystem

from .utils import AppConfig, Greeting


class Client(MultihostRole[Any]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fs = LinuxFileSystem(self.host)
        self.greeting = Greeting(self.host)

    def hostname(self) -> str:
        return self.host.conn.exec(["hostname"]).stdout.strip()


class Server(MultihostRole[Any]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fs = LinuxFileSystem(self.host)
        self.appconf = AppConfig(self.host)
