"""What a host's service manager says of one service: read the same way by the svc utility and the journal."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...host import MultihostHost

__all__ = ["service_state"]


def service_state(host: MultihostHost, name: str) -> tuple[str, str]:
    """``(active, enabled)`` words for ``name``, as the host's service manager prints them.

    With systemd: ``systemctl is-active`` and ``is-enabled`` (``active``, ``reloading``, ...;
    ``enabled``, ``masked``, ...). Without: ``active``/``inactive`` from ``service NAME status``
    and ``enabled``/``disabled`` from the rc2.d links, or ``none`` when the service has no rc.d link
    at all (never enabled nor disabled: disabling it would leave ``K`` links where there were none).
    An empty word: nothing was printed.
    """
    quoted = shlex.quote(name)
    script = (
        "if [ -d /run/systemd/system ]; then "
        f"systemctl is-active {quoted} 2>/dev/null | head -1; systemctl is-enabled {quoted} 2>/dev/null | head -1; "
        f"else service {quoted} status >/dev/null 2>&1 && echo active || echo inactive; "
        f"if ls /etc/rc2.d/S??{quoted} >/dev/null 2>&1; then echo enabled; "
        f"elif ls /etc/rc?.d/[SK]??{quoted} >/dev/null 2>&1; then echo disabled; else echo none; fi; fi"
    )
    words = host.conn.run(script, raise_on_error=False).stdout.split()
    return (words[0] if words else ""), (words[1] if len(words) > 1 else "")
