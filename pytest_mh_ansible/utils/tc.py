"""Traffic control: delay, loss and rate limits towards a host; removed after the test."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import MultihostError
from ..utility import MultihostUtility
from .firewall import resolve_addresses

if TYPE_CHECKING:
    from ..host import MultihostHost
    from ..role import MultihostRole

__all__ = ["TrafficControl"]

UNLIMITED = "10gbit"
_MISSING_QDISC = ("Unknown qdisc", "Specified qdisc not found", "Specified qdisc kind is unknown")


@dataclass
class _Shape:
    """What one target gets: an htb class (its rate, or unlimited), with a netem leaf for delay/loss."""

    band: int
    addresses: list[str]
    delay_ms: int = 0
    jitter_ms: int = 0
    loss: float = 0.0
    rate: str | None = None
    filtered: bool = False
    leaf: bool = False  # a netem leaf is on the class now


@dataclass
class _Device:
    shapes: dict[str, _Shape] = field(default_factory=dict)  # key: the target's first address


class TrafficControl(MultihostUtility["MultihostHost"]):
    """Delay, loss and rate limits on traffic from this host towards another; removed after the test.

    On the interface that routes to the target, an ``htb`` root qdisc (``handle 1:``, unmatched
    traffic in the unlimited class ``1:1``) is added; each target gets its own class (its rate
    limit, else unlimited), a ``u32`` filter on its destination address and, for delay and loss, a
    ``netem`` leaf (``sch_netem`` in the kernel). The rollback journal deletes the root qdisc at the end of the
    scope, which returns the interface to its kernel default. A non-default root qdisc already on the
    interface is never replaced: that is an error, not a silent loss of the host's own shaping.

    Example::

        def test_slow_server(client, server):
            client.tc.limit_rate(server, "1mbit")           # htb: works on every kernel
            client.tc.add_delay(server, 200, jitter_ms=20)  # netem: needs sch_netem
            client.tc.add_loss(server, 5)
            ...                                              # all removed after the test
    """

    def __init__(self, host: MultihostHost) -> None:
        super().__init__(host)
        self._devices: dict[str, _Device] = {}

    def add_delay(self, target: MultihostHost | MultihostRole[Any] | str, delay_ms: int, *, jitter_ms: int = 0) -> None:
        """Delay packets towards ``target`` by ``delay_ms`` (± ``jitter_ms``) milliseconds (netem).

        A second call sets the delay anew; ``0`` removes it, as :meth:`remove_delay` does.
        """
        self._shape(target, delay_ms=int(delay_ms), jitter_ms=int(jitter_ms))

    def remove_delay(self, target: MultihostHost | MultihostRole[Any] | str) -> None:
        """Stop delaying packets towards ``target`` now; its loss and rate limit stay. Nothing when it is not delayed.

        Without loss the netem leaf is deleted, so the target's class is back to its default leaf.
        """
        addresses = resolve_addresses(self.host, target)
        for dev, device in self._devices.items():
            shape = device.shapes.get(addresses[0])
            if shape is not None and (shape.delay_ms or shape.jitter_ms):
                shape.delay_ms = shape.jitter_ms = 0
                self._apply(dev, shape)

    def add_loss(self, target: MultihostHost | MultihostRole[Any] | str, percent: float) -> None:
        """Drop ``percent`` % of the packets towards ``target`` at random (netem)."""
        if not 0 <= float(percent) <= 100:
            raise MultihostError(f"host {self.host.name!r}: loss {percent!r} is not a percentage")
        self._shape(target, loss=float(percent))

    def limit_rate(self, target: MultihostHost | MultihostRole[Any] | str, rate: str = "1mbit") -> None:
        """Limit traffic towards ``target`` to ``rate`` (tc units: ``"512kbit"``, ``"1mbit"``)."""
        if not re.fullmatch(r"\d+(\.\d+)?[kmgt]?(bit|bps)", rate):
            raise MultihostError(f"host {self.host.name!r}: rate {rate!r} is not a tc rate such as '1mbit'")
        self._shape(target, rate=rate)

    def clear(self) -> None:
        """Remove every shaping of this utility now (deletes our root qdiscs)."""
        for dev in list(self._devices):
            self._remove_root(dev)

    def show(self) -> str:
        """``tc qdisc show`` and ``tc filter show`` of the devices we shaped."""
        cmds = "; ".join(f"tc qdisc show dev {d}; tc filter show dev {d}" for d in self._devices)
        return self.host.conn.run(cmds or "tc qdisc show", raise_on_error=False).stdout

    # -- internals -------------------------------------------------------------------------------
    def _shape(self, target: Any, **change: Any) -> None:
        addresses = resolve_addresses(self.host, target)
        dev = self._route_device(addresses[0])
        device = self._ensure_root(dev)
        shape = device.shapes.get(addresses[0])
        if shape is None:
            band = len(device.shapes) + 2
            shape = device.shapes[addresses[0]] = _Shape(band, addresses)
        for key, value in change.items():
            setattr(shape, key, value)
        self._apply(dev, shape)

    def _apply(self, dev: str, shape: _Shape) -> None:
        for cmd in shape_commands(dev, shape):
            self._run(cmd)
        shape.filtered = True
        shape.leaf = has_netem(shape)

    def _run(self, cmd: str) -> None:
        result = self.host.conn.run(cmd, raise_on_error=False)
        if result.rc == 0:
            return
        if any(text in result.stderr for text in _MISSING_QDISC):
            kind = next((k for k in ("netem", "htb") if f" {k}" in cmd), "?")
            raise MultihostError(
                f"host {self.host.name!r}: the kernel has no {kind!r} qdisc "
                f"(load kernel module 'sch_{kind}' on the machine): {cmd!r}: {result.stderr.strip()}"
            )
        result.throw()

    def _route_device(self, address: str) -> str:
        out = self.host.conn.run(f"ip -o route get {shlex.quote(address)}").stdout
        match = re.search(r"\bdev (\S+)", out)
        if not match:
            raise MultihostError(f"host {self.host.name!r}: no route to {address!r}: {out.strip()!r}")
        return match.group(1)

    def _ensure_root(self, dev: str) -> _Device:
        if dev in self._devices:
            return self._devices[dev]
        current = self.host.conn.run(f"tc qdisc show dev {shlex.quote(dev)} root").stdout.strip()
        if not is_default_root(current):
            raise MultihostError(
                f"host {self.host.name!r}: device {dev!r} already has a root qdisc ({current!r}); "
                "traffic control will not replace the host's own shaping"
            )
        self._devices[dev] = _Device()
        self.host.journal.record(self.host, f"tc root qdisc on {dev}", lambda: self._remove_root(dev))
        for cmd in root_commands(dev):
            self._run(cmd)
        return self._devices[dev]

    def _remove_root(self, dev: str) -> None:
        if self._devices.pop(dev, None) is not None:
            current = self.host.conn.run(f"tc qdisc show dev {shlex.quote(dev)} root").stdout
            if not is_default_root(current):  # the add itself may have failed
                self.host.conn.run(f"tc qdisc del dev {shlex.quote(dev)} root")


def is_default_root(show: str) -> bool:
    """True when ``tc qdisc show dev X root`` shows a kernel default (handle ``0:``, or nothing)."""
    return not show or re.match(r"qdisc \S+ 0: ", show) is not None


def has_netem(shape: _Shape) -> bool:
    """Whether ``shape`` needs a netem leaf (a delay, jitter or loss)."""
    return bool(shape.delay_ms or shape.jitter_ms or shape.loss)


def shape_commands(dev: str, shape: _Shape) -> list[str]:
    """The ``tc`` commands that (re)configure ``shape``: its htb class, a netem leaf, filters (first time only)."""
    rate = shape.rate or UNLIMITED
    dev = shlex.quote(dev)
    cmds = [f"tc class replace dev {dev} parent 1: classid 1:{shape.band} htb rate {rate} ceil {rate}"]
    if has_netem(shape):
        args = ["netem"]
        if shape.delay_ms or shape.jitter_ms:
            args += ["delay", f"{shape.delay_ms}ms"] + ([f"{shape.jitter_ms}ms"] if shape.jitter_ms else [])
        if shape.loss:
            args += ["loss", f"{shape.loss:g}%"]
        cmds.append(f"tc qdisc replace dev {dev} parent 1:{shape.band} handle {shape.band}0: {' '.join(args)}")
    elif shape.leaf:  # delay and loss gone: back to the class's default leaf
        cmds.append(f"tc qdisc del dev {dev} parent 1:{shape.band} handle {shape.band}0:")
    if not shape.filtered:
        for address in shape.addresses:
            proto, match = ("ipv6", "ip6") if ":" in address else ("ip", "ip")
            prefix = 128 if ":" in address else 32
            cmds.append(
                f"tc filter add dev {dev} parent 1: protocol {proto} prio 1 u32 "
                f"match {match} dst {address}/{prefix} flowid 1:{shape.band}"
            )
    return cmds


def root_commands(dev: str) -> list[str]:
    """The root ``htb`` qdisc; unmatched traffic goes to class 1:1, which is not limited."""
    dev = shlex.quote(dev)
    return [
        f"tc qdisc add dev {dev} root handle 1: htb default 1",
        f"tc class add dev {dev} parent 1: classid 1:1 htb rate {UNLIMITED} ceil {UNLIMITED}",
    ]
