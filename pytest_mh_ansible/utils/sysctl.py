"""Kernel parameters (sysctl): set and restore."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from ..errors import MultihostError
from ..utility import MultihostUtility

if TYPE_CHECKING:
    from ..host import MultihostHost  # noqa: F401 - in the base class as a string: host.py imports utils

__all__ = ["Sysctl"]


class Sysctl(MultihostUtility["MultihostHost"]):
    """Kernel parameters, set at run time (``/proc/sys``, never persisted); the old value is back after the test.

    The value is written with ``sysctl -w`` and the old value recorded in the journal. On lab hosts
    only network-namespaced keys (``net.*``) are writable; other keys raise a clear error.

    Example::

        def test_forwarding(router):
            router.sysctl.set("net.ipv4.ip_forward", "1")
            assert router.sysctl.get("net.ipv4.ip_forward") == "1"
    """

    @staticmethod
    def _path(key: str) -> str:
        return "/proc/sys/" + key.replace(".", "/")

    def get(self, key: str) -> str:
        """The current value of ``key`` (whitespace-normalised, as ``sysctl -n`` prints it)."""
        return " ".join(self.host.conn.run(f"cat {shlex.quote(self._path(key))}").stdout.split())

    def set(self, key: str, value: str | int) -> bool:
        """Set ``key`` to ``value`` now; the old value is restored after the test.

        :returns: True when the value changed.
        :raises MultihostError: The key does not exist or is not writable on the host.
        """
        host, path, new = self.host, shlex.quote(self._path(key)), " ".join(str(value).split())
        if host.vars.get("mh_lab") and not key.startswith("net."):
            raise MultihostError(
                f"{host.name}: cannot set sysctl {key!r} to {new!r}: lab hosts share the machine's kernel, "
                "only network-namespaced net.* keys are the host's own"
            )
        out = host.conn.run(
            f"test -e {path} || {{ echo missing; exit 1; }}; "
            f"test -w {path} || {{ echo readonly; exit 1; }}; cat {path}",
            raise_on_error=False,
        )
        if out.rc != 0:
            why = (
                "no such key"
                if "missing" in out.stdout
                else "it is read-only here (in a container or lab host only network-namespaced net.* keys are)"
            )
            raise MultihostError(f"{host.name}: cannot set sysctl {key!r} to {new!r}: {why}")
        old = " ".join(out.stdout.split())
        if old == new:
            return False
        host.conn.run(f"printf '%s\\n' {shlex.quote(new)} > {path}")
        restore = f"printf '%s\\n' {shlex.quote(old)} > {path}"

        def undo() -> None:
            host.conn.run(restore)

        host.journal.record(host, f"sysctl {key}={new} (was {old})", undo)
        return True
