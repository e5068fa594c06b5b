"""Connecting a topology's hosts at once: each host's connection opens in its own thread.

A fresh ssh connection takes a quarter of a second or more (key exchange); opened one after
another, three hosts cost three times that before the first test. Each host has its own
transport (with its own lock), so opening them side by side is safe.
"""

from __future__ import annotations

import threading
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


_LOADED: dict[str, threading.Event] = {}  # connection kind -> set once its first connection has opened
_LOADED_LOCK = threading.Lock()


def in_parallel(items: Sequence[T], kind: Callable[[T], str], work: Callable[[T], R]) -> list[R]:
    """``[work(item) for item in items]``, side by side in threads, in the order of ``items``.

    Ansible loads a connection plugin's module on its first use, and two threads loading one
    module at once can see it half-imported ("module ... has no attribute 'Connection'"). So the
    first item of each ``kind`` (its ``ansible_connection``) not seen yet in this process runs
    alone, first, and other callers (the leases' connections open beside the tests' ones) wait
    for it; the rest run in parallel.
    """
    results: dict[int, R] = {}
    rest: list[int] = []
    for index, item in enumerate(items):
        name = kind(item)
        with _LOADED_LOCK:
            loaded = _LOADED.get(name)
            first = loaded is None
            if first:
                loaded = _LOADED[name] = threading.Event()
        assert loaded is not None
        if first:
            try:
                results[index] = work(item)
            finally:
                loaded.set()
        else:
            loaded.wait()
            rest.append(index)
    if len(rest) == 1:
        results[rest[0]] = work(items[rest[0]])
    elif rest:
        with ThreadPoolExecutor(max_workers=min(MAX_THREADS, len(rest)), thread_name_prefix="mh-connect") as pool:
            for index, result in zip(rest, pool.map(lambda i: work(items[i]), rest), strict=True):
                results[index] = result
    return [results[index] for index in range(len(items))]


def connection_kind(variables: Mapping[str, Any]) -> str:
    """The connection plugin a host's variables name (``ssh`` by default, as Ansible's ``smart``)."""
    return str(variables.get("ansible_connection") or "ssh")


def probe_all(hosts: Sequence[MultihostHost]) -> dict[str, BaseException | None]:
    """Connect every host and run ``true`` on it, in parallel.

    :returns: For each host name, the error that connecting or the probe raised, or None.
    """
    results = in_parallel(hosts, lambda host: connection_kind(host.vars), _probe)
    return {host.name: result for host, result in zip(hosts, results, strict=True)}
