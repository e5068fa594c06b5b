"""Local users with passwords, removed after the test that made them."""

from __future__ import annotations

from typing import Any

from pytest_mh import MultihostUtility, mh_utility_postpone_setup


@mh_utility_postpone_setup
class LocalUsers(MultihostUtility[Any]):
    """``role.users.add("tuser", "Secret123")``; set up only when a test uses it."""

    def __init__(self, host: Any) -> None:
        super().__init__(host)
        self.names: list[str] = []

    def add(self, name: str, password: str) -> str:
        self.host.conn.run(f"useradd -m -s /bin/bash {name}")
        self.host.conn.run("chpasswd", input=f"{name}:{password}\n")
        self.names.append(name)
        return name

    def exists(self, name: str) -> bool:
        return self.host.conn.exec(["id", name], raise_on_error=False).rc == 0

    def teardown(self) -> None:
        if self.names:
            # --force: the sshd of a session the test just closed may not have exited yet
            self.host.conn.run("; ".join(f"userdel --remove --force {name}" for name in self.names))
            self.names.clear()
        super().teardown()
