"""Choosing the lab's private /24: never one that is already routed or assigned on this machine."""

from __future__ import annotations

import ipaddress
import json
import subprocess
from collections.abc import Iterable
from ipaddress import IPv4Network
from typing import Final

from pytest_mh_ansible.errors import LabError

__all__ = ["AUTO_POOL", "bridge_address", "choose_subnet", "host_address", "taken_networks"]

# 10.213.0.0/16 is as good as any private range and is what the lab has always used here.
AUTO_POOL: Final = IPv4Network("10.213.0.0/16")


def taken_networks() -> list[IPv4Network]:
    """Every IPv4 network routed (any table) or assigned on this machine, except default routes."""
    networks: list[IPv4Network] = []
    for argv in (["ip", "-j", "-4", "route", "show", "table", "all"], ["ip", "-j", "-4", "addr", "show"]):
        try:
            out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError) as err:
            raise LabError(f"cannot list the machine's networks with {' '.join(argv)!r}: {err}") from err
        for entry in json.loads(out or "[]"):
            if "dst" in entry:
                dst = entry["dst"]
                if dst == "default":
                    continue
                try:
                    networks.append(IPv4Network(dst, strict=False))
                except ValueError:
                    continue
            for addr in entry.get("addr_info", ()):
                if addr.get("family") == "inet":
                    networks.append(IPv4Network(f"{addr['local']}/{addr['prefixlen']}", strict=False))
    return [n for n in networks if n.prefixlen > 0]


def choose_subnet(requested: str | None, taken: Iterable[IPv4Network], *, lab: str = "lab") -> IPv4Network:
    """The requested subnet if it is free, else the first free /24 of 10.213.0.0/16.

    :param requested: ``10.213.7.0/24`` or ``None`` for automatic choice.
    :param taken: Networks already in use (see :func:`taken_networks`); a test can pass fakes.
    :raises LabError: The requested subnet overlaps one in use, or no /24 of the pool is free.
    """
    taken = list(taken)
    if requested is not None:
        net = IPv4Network(requested)
        clash = sorted({t for t in taken if t.overlaps(net)})
        if clash:
            raise LabError(
                f"lab {lab!r}: subnet {requested!r} is taken on this machine (overlaps {', '.join(map(str, clash))}); "
                "choose another or leave it to 'auto'"
            )
        return net
    for candidate in AUTO_POOL.subnets(new_prefix=24):
        if not any(t.overlaps(candidate) for t in taken):
            return candidate
    raise LabError(f"lab {lab!r}: every /24 of {AUTO_POOL} is taken on this machine; pass a subnet explicitly")


def host_address(subnet: IPv4Network, index: int) -> ipaddress.IPv4Address:
    """Host number ``index`` gets ``.11``, ``.12``, ...; ``.1`` is the bridge (the machine's side)."""
    return subnet.network_address + 11 + index


def bridge_address(subnet: IPv4Network) -> ipaddress.IPv4Address:
    """The machine's own address on the lab bridge."""
    return subnet.network_address + 1
