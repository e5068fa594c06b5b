"""``pytest_mh.utils.tc``: ``LinuxTrafficControl`` on this project's :class:`~pytest_mh_ansible.TrafficControl`."""

from __future__ import annotations

import re
from typing import Any

from ... import MultihostHost, MultihostRole
from ...utils.tc import TrafficControl
from ..utility import MultihostUtility

__all__ = ["LinuxTrafficControl", "delay_ms"]

# tc's time units, in milliseconds per unit; a bare number is milliseconds, as in pytest-mh.
_UNITS = {
    "": 1.0,
    "us": 0.001,
    "usec": 0.001,
    "usecs": 0.001,
    "ms": 1.0,
    "msec": 1.0,
    "msecs": 1.0,
    "s": 1000.0,
    "sec": 1000.0,
    "secs": 1000.0,
}
_TIME = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*")


def delay_ms(time: str | int) -> int:
    """``time`` as pytest-mh takes it (an int of milliseconds, or a tc time such as ``"500ms"``, ``"1.5s"``)
    in whole milliseconds.

    :raises ValueError: Not a time, a negative one, or one that is not a whole number of milliseconds.
    """
    if isinstance(time, bool) or not isinstance(time, int | str):
        raise ValueError(f"delay {time!r}: expected an int (milliseconds) or a str such as '500ms'")
    if isinstance(time, int):
        if time < 0:
            raise ValueError(f"delay {time!r}: a delay cannot be negative")
        return time
    match = _TIME.fullmatch(time.lower())
    if match is None or match.group(2) not in _UNITS:
        raise ValueError(f"delay {time!r}: expected a number with an optional unit (us, ms, s), such as '500ms'")
    value = float(match.group(1)) * _UNITS[match.group(2)]
    if abs(value - round(value)) > 1e-9:
        raise ValueError(f"delay {time!r}: the compatibility layer delays by whole milliseconds")
    return round(value)


class LinuxTrafficControl(MultihostUtility[Any], TrafficControl):
    """pytest-mh's traffic control utility: delay traffic towards a host; removed after the test.

    Backed by :class:`~pytest_mh_ansible.utils.TrafficControl`: an ``htb`` root qdisc on the
    interface that routes to the target, a ``netem`` leaf per delayed target (the kernel needs
    ``sch_netem``), and the rollback journal that deletes the root qdisc when the test (or scope)
    ends. ``host`` is a host name, a host or a role (the name other hosts know it by is used);
    ``time`` is milliseconds (``int``) or a tc time string. The project's own ``add_loss`` and
    ``limit_rate`` are available too.

    It is a pytest-mh ``MultihostUtility`` (``postpone_setup()``, ``logger``, ``artifacts``,
    ``get_artifacts_list``); its setup changes nothing on the host (the root qdisc is added by the
    first ``add_delay``), so postponing it only skips a no-op. A role creates it in its
    ``__init__``, as in pytest-mh: ``self.tc = LinuxTrafficControl(self.host).postpone_setup()``.

    Example::

        def test_slow_server(client, server):
            tc = client.tc
            tc.add_delay(server, "500ms")   # or 500, or server.host, or "server1"
            ...
            tc.remove_delay(server)         # else removed after the test
    """

    @staticmethod
    def _target(host: object) -> str | MultihostHost | MultihostRole[Any]:
        if isinstance(host, str | MultihostHost | MultihostRole):
            return host
        raise ValueError(f"Invalid type of host: {type(host).__name__}, expected str, MultihostHost or MultihostRole")

    def add_delay(  # pytest-mh's argument names and types (jitter_ms kept from the base)
        self, host: str | MultihostHost | MultihostRole[Any], time: str | int, *, jitter_ms: int = 0
    ) -> None:
        """Delay packets towards ``host`` by ``time`` (``500`` or ``"500ms"``); a second call changes the delay."""
        self.logger.info(f"Adding network delay {time} to {host}")
        super().add_delay(self._target(host), delay_ms(time), jitter_ms=jitter_ms)

    def remove_delay(self, host: str | MultihostHost | MultihostRole[Any]) -> None:
        """Stop delaying packets towards ``host`` now (its loss and rate limit, if any, stay); no-op if not delayed."""
        self.logger.info(f"Removing network delay to {host}")
        super().remove_delay(self._target(host))
