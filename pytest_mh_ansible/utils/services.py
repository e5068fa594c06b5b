"""Services: start, stop, restart, enable...; the original state restored."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from .._private.rollback.service_state import service_state
from ..utility import MultihostUtility

if TYPE_CHECKING:
    from ..host import MultihostHost  # noqa: F401 - in the base class as a string: host.py imports utils

__all__ = ["Services"]


class Services(MultihostUtility["MultihostHost"]):
    """Services through ``ansible.builtin.service`` (systemd and sysv); the old state is back after the test.

    The journal records whether each service was running and enabled before its first change in
    the scope and puts that back at the end of the scope: a service the test stopped is started
    again, one it started is stopped, a restart of a running service leaves it running.

    Example::

        def test_reload_picks_up_config(server):
            server.fs.write("/etc/app.conf", "port = 8080\\n")
            server.svc.restart("app")
            assert server.svc.is_active("app")
            server.svc.disable("app")   # enabled again after the test
    """

    def _service(self, name: str, **kwargs: Any) -> bool:
        return self.host.ansible.run("ansible.builtin.service", name=name, **kwargs).changed

    def start(self, name: str) -> bool:
        """Start ``name`` (nothing if it runs); stopped again after the test if it was not running."""
        return self._service(name, state="started")

    def stop(self, name: str) -> bool:
        """Stop ``name``; started again after the test if it was running."""
        return self._service(name, state="stopped")

    def restart(self, name: str) -> bool:
        """Restart ``name`` (starts it if stopped); on systemd a failed unit is reset first."""
        # one round trip: the systemd probe and the reset together
        self.host.conn.run(
            f"! test -d /run/systemd/system || systemctl reset-failed {shlex.quote(name)}", raise_on_error=False
        )
        return self._service(name, state="restarted")

    def reload(self, name: str) -> bool:
        """Reload ``name``'s configuration."""
        return self._service(name, state="reloaded")

    def enable(self, name: str) -> bool:
        """Enable ``name`` at boot; disabled again after the test if it was."""
        return self._service(name, enabled=True)

    def disable(self, name: str) -> bool:
        """Disable ``name`` at boot; enabled again after the test if it was."""
        return self._service(name, enabled=False)

    def status(self, name: str) -> dict[str, bool]:
        """``{"active": ..., "enabled": ...}`` for ``name`` (read with systemctl, or ``service`` and rc2.d links)."""
        active, enabled = service_state(self.host, name)
        return {
            "active": active in ("active", "reloading"),
            "enabled": enabled in ("enabled", "enabled-runtime", "alias"),
        }

    def is_active(self, name: str) -> bool:
        """True when ``name`` is running."""
        return self.status(name)["active"]
