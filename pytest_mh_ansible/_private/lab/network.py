"""The lab's network: one bridge on the machine, one netns + veth per host, nothing routed off the machine."""

from __future__ import annotations

import time
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

from pytest_mh_ansible._private.lab.system import run
from pytest_mh_ansible.errors import LabError

__all__ = ["create_bridge", "create_host_link", "delete_bridge", "delete_host_link", "link_exists", "netns_exists"]


def link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


def netns_exists(name: str) -> bool:
    return Path("/run/netns", name).exists()


def create_bridge(bridge: str, address: IPv4Address, subnet: IPv4Network) -> None:
    """The bridge carries the machine's own lab address (.1), so the controller reaches every host directly.

    ip_forward is never touched (it stays 0), so nothing a host sends leaves the machine.
    """
    if link_exists(bridge):
        raise LabError(f"bridge {bridge!r} already exists: another lab with this name is up, or was not torn down")
    what = f"creating bridge {bridge!r}"
    run(["ip", "link", "add", bridge, "type", "bridge"], what=what)
    run(["ip", "addr", "add", f"{address}/{subnet.prefixlen}", "dev", bridge], what=what)
    run(["ip", "link", "set", bridge, "up"], what=what)


def create_host_link(netns: str, veth: str, bridge: str, address: IPv4Address, gateway: IPv4Address) -> None:
    """A netns whose eth0 is the peer of ``veth``, plugged into the lab bridge."""
    what = f"creating network namespace {netns!r}"
    if netns_exists(netns):
        raise LabError(f"{what}: it already exists (a lab with this name was not torn down: run 'lab down')")
    run(["ip", "netns", "add", netns], what=what)
    run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns], what=what)
    run(["ip", "link", "set", veth, "master", bridge, "up"], what=what)
    batch = "\n".join(
        [
            "link set lo up",
            f"addr add {address}/24 dev eth0",
            "link set eth0 up",
            f"route add default via {gateway}",
        ]
    )
    run(["ip", "-n", netns, "-batch", "-"], what=what, input=batch + "\n")


def _delete(argv: list[str], what: str) -> list[Exception]:
    """Run one teardown command; its failure is returned, not raised, so that teardown goes on."""
    try:
        run(argv, what=what)
    except LabError as err:
        return [err]
    return []


def delete_host_link(netns: str, veth: str) -> list[Exception]:
    """Delete the veth and the netns; returns the errors rather than stopping at the first."""
    errors: list[Exception] = []
    if link_exists(veth):
        failed = _delete(["ip", "link", "del", veth], f"deleting veth {veth!r}")
        if link_exists(veth):  # a failed delete that removed the veth all the same is no error
            errors += failed
    if netns_exists(netns):
        errors += _delete(["ip", "netns", "del", netns], f"deleting network namespace {netns!r}")
    return errors


def delete_bridge(bridge: str, veths: list[str], *, timeout: float = 5.0) -> list[Exception]:
    """Delete the bridge once its veths are gone (``ip netns del`` removes them asynchronously)."""
    deadline = time.monotonic() + timeout
    while any(link_exists(v) for v in veths) and time.monotonic() < deadline:
        time.sleep(0.02)
    errors: list[Exception] = [
        LabError(f"veth {v!r} still exists {timeout:g} s after its netns was deleted") for v in veths if link_exists(v)
    ]
    if link_exists(bridge):
        errors += _delete(["ip", "link", "del", bridge], f"deleting bridge {bridge!r}")
    return errors
