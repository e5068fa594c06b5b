"""Packages: install and remove; undone after the test."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from ..utility import MultihostUtility

if TYPE_CHECKING:
    from ..host import MultihostHost

__all__ = ["Packages"]


class Packages(MultihostUtility["MultihostHost"]):
    """Packages through ``ansible.builtin.apt`` (dpkg hosts, no cache update) or ``ansible.builtin.package``.

    Installed packages are removed after the test (purged on dpkg hosts), removed ones reinstalled.
    The package cache is never refreshed: packages come from what the host's sources already know.

    Example::

        def test_tree_lists_home(server):
            server.pkg.install("tree")            # removed after the test
            assert server.pkg.is_installed("tree")
    """

    def __init__(self, host: MultihostHost) -> None:
        super().__init__(host)
        self._dpkg: bool | None = None

    def _is_dpkg(self) -> bool:
        if self._dpkg is None:
            self._dpkg = self.host.conn.run("command -v dpkg-query", raise_on_error=False).rc == 0
        return self._dpkg

    def _package(self, names: tuple[str, ...], state: str) -> bool:
        if not names:
            return False
        if self._is_dpkg():
            args = {"name": list(names), "state": state, "update_cache": False}
            if state == "absent":
                args["purge"] = True
            return self.host.ansible.run("ansible.builtin.apt", args).changed
        return self.host.ansible.run("ansible.builtin.package", name=list(names), state=state).changed

    def install(self, *names: str) -> bool:
        """Install ``names``; the ones that were not installed are removed after the test."""
        return self._package(names, "present")

    def remove(self, *names: str) -> bool:
        """Remove ``names``; the ones that were installed are reinstalled after the test."""
        return self._package(names, "absent")

    def is_installed(self, name: str) -> bool:
        """True when ``name`` is installed (dpkg-query, else rpm)."""
        quoted = shlex.quote(name)
        if self._is_dpkg():
            cmd = f"dpkg-query -W -f='${{db:Status-Abbrev}}' {quoted} 2>/dev/null | grep -q '^ii'"
        else:
            cmd = f"rpm -q {quoted} >/dev/null 2>&1"
        return self.host.conn.run(cmd, raise_on_error=False).rc == 0
