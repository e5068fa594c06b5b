"""Connecting a topology's hosts at once: each host's connection opens in its own thread.

A fresh ssh connection takes a quarter of a second or more (key exchange); opened one after
another, three hosts cost three times that before the first test. Each host has its own
transport (with its own lock), so opening them side by side is safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...host import MultihostHost

__all__ = ["probe_all"]

MAX_THREADS = 16


def _probe(host: MultihostHost) -> BaseException | None:
    try:
        host.conn.connect()
        # Connection plugins connect lazily; one command proves the host is reachable.
        host.conn.run("true", raise_on_error=False)
    except Exception as err:
        return err
    return None


def probe_all(hosts: Sequence[MultihostHost]) -> dict[str, BaseException | None]:
    """Connect every host and run ``true`` on it, in parallel.

    :returns: For each host name, the error that connecting or the probe raised, or None.
    """
    if len(hosts) <= 1:
        return {host.name: _probe(host) for host in hosts}
    with ThreadPoolExecutor(max_workers=min(MAX_THREADS, len(hosts)), thread_name_prefix="mh-connect") as pool:
        results = list(pool.map(_probe, hosts))
    return {host.name: result for host, result in zip(hosts, results, strict=True)}
