"""Utilities: an eager one and a postponed one, each leaving a marker file while it is set up."""

from __future__ import annotations

from typing import Any

from pytest_mh import MultihostUtility, mh_utility_postpone_setup

from .hosts import APP_CONF


class Greeting(MultihostUtility[Any]):
    """Set up before every test of its role (pytest-mh's default)."""

    MARKER = "/tmp/mhcompat-greeting"

    def setup(self) -> None:
        super().setup()
        self.host.conn.run(f"echo hello > {self.MARKER}")

    def teardown(self) -> None:
        self.host.conn.run(f"rm -f {self.MARKER}")
        super().teardown()


@mh_utility_postpone_setup
class AppConfig(MultihostUtility[Any]):
    """Edits the server's configuration; set up only when a test uses it, and then restored."""

    MARKER = "/tmp/mhcompat-appconfig"

    def __init__(self, host: Any) -> None:
        super().__init__(host)
        self.original = ""

    def setup(self) -> None:
        super().setup()
        self.original = self.host.conn.run(f"cat {APP_CONF}").stdout
        self.host.conn.run(f"touch {self.MARKER}")

    def set(self, key: str, value: str) -> None:
        self.host.conn.run(f"printf '%s = %s\\n' {key} {value} > {APP_CONF}")

    def get(self, key: str) -> str:
        for line in self.host.conn.run(f"cat {APP_CONF}").stdout_lines:
            name, _, value = line.partition("=")
            if name.strip() == key:
                return value.strip()
        raise KeyError(key)

    def teardown(self) -> None:
        self.host.conn.run(f"cat > {APP_CONF}", input=self.original + "\n")
        self.host.conn.run(f"rm -f {self.MARKER}")
        super().teardown()
