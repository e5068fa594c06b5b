"""Connecting a topology's hosts at once: each host's connection opens in its own thread.

A fresh ssh connection takes a quarter of a second or more (key exchange); opened one after
another, three hosts cost three times that before the first test. Each host has its own
transport (with its own lock), so opening them side by side is safe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ...host import MultihostHost

__all__ = ["connection_kind", "in_parallel", "probe_all"]

T = TypeVar("T")
R = TypeVar("R")

MAX_THREADS = 16


def _probe(host: MultihostHost) -> BaseException | None:
    try:
        host.conn.connect()
        # Connection plugins connect lazily; one command proves the host is reachable.
        host.conn.run("true", raise_on_error=False)
    except Exception as err:
        return err
    return None


def in_parallel(items: Sequence[T], work: Callable[[T], R]) -> list[R]:
    """``[work(item) for item in items]``, side by side in threads, in the order of ``items``.

    The work may open connections of a plugin that this process has not loaded yet: the
    transport loads plugins under a lock of the Ansible boundary and opens the connection
    outside it, so the handshakes still overlap.
    """
    if len(items) <= 1:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(MAX_THREADS, len(items)), thread_name_prefix="mh-connect") as pool:
        return list(pool.map(work, items))


def connection_kind(variables: Mapping[str, Any]) -> str:
    """The connection plugin a host's variables name (``ssh`` by default, as Ansible's ``smart``)."""
    return str(variables.get("ansible_connection") or "ssh")


def probe_all(hosts: Sequence[MultihostHost]) -> dict[str, BaseException | None]:
    """Connect every host and run ``true`` on it, in parallel.

    :returns: For each host name, the error that connecting or the probe raised, or None.
    """
    results = in_parallel(hosts, _probe)
    return {host.name: result for host, result in zip(hosts, results, strict=True)}
