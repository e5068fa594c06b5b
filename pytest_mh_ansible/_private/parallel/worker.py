"""The files through which the pool scheduler and its workers talk, and the worker's side of it.

xdist sends a worker only test indices. What the scheduler needs on top (each test's topology)
and what the worker needs on top (which hosts to use) goes through a run directory that the
controller makes and passes to the workers in ``workerinput``:

- ``collection-<worker>.json``, written by each worker after collection:
  ``{"tests": {nodeid: topology or null}, "topologies": {name: {domain: {role: count}}}}``;
- ``placement-<worker>.jsonl``, appended by the scheduler before it sends a unit's tests:
  one line ``{"topology": name, "slots": [[domain, role, [hosts]]], "tests": [nodeids]}``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...topology import Topology
from ..session.assignment import Assignment

__all__ = ["Placements", "append_placement", "read_collection", "unit_key", "write_collection"]


def _collection_path(run_dir: Path, worker: str) -> Path:
    return run_dir / f"collection-{worker}.json"


def _placement_path(run_dir: Path, worker: str) -> Path:
    return run_dir / f"placement-{worker}.jsonl"


def unit_key(topology: str, pool: str | None) -> str:
    """What the scheduler schedules: a topology, in one pool of a fleet (``pair@debian12``) or anywhere."""
    return topology if pool is None else f"{topology}@{pool}"


def write_collection(
    run_dir: Path,
    worker: str,
    tests: Mapping[str, str | None],
    topologies: Mapping[str, Topology],
    pools: Mapping[str, str | None] | None = None,
) -> None:
    """Record each collected test's unit key (None: no hosts needed), each key's topology and pool."""
    data = {
        "tests": dict(tests),
        "topologies": {name: {d.id: dict(d.roles) for d in topology} for name, topology in topologies.items()},
        "pools": dict(pools or {}),
    }
    path = _collection_path(run_dir, worker)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)  # the controller never reads half a file


def read_collection(
    run_dir: Path, worker: str
) -> tuple[dict[str, str | None], dict[str, Topology], dict[str, str | None]]:
    """The ``(tests, topologies, pools)`` that ``worker`` recorded; empty when it recorded nothing."""
    path = _collection_path(run_dir, worker)
    if not path.exists():
        return {}, {}, {}
    data = json.loads(path.read_text())
    topologies = {name: Topology.from_counts(counts) for name, counts in data["topologies"].items()}
    return dict(data["tests"]), topologies, dict(data.get("pools", {}))


def append_placement(run_dir: Path, worker: str, topology: str, assignment: Assignment, tests: list[str]) -> None:
    """Tell ``worker`` which hosts its next ``tests`` of ``topology`` use (before they are sent)."""
    line = {
        "topology": topology,
        "slots": [[domain, role, list(hosts)] for (domain, role), hosts in assignment.slots.items()],
        "tests": tests,
    }
    with _placement_path(run_dir, worker).open("a") as handle:
        handle.write(json.dumps(line) + "\n")


class Placements:
    """The worker's view of its placement file: which assignment the scheduler chose for a test."""

    def __init__(self, run_dir: Path, worker: str) -> None:
        self._path = _placement_path(run_dir, worker)
        self._offset = 0
        self._by_test: dict[str, tuple[str, Assignment]] = {}

    def _read_new_lines(self) -> None:
        if not self._path.exists():
            return
        with self._path.open() as handle:
            handle.seek(self._offset)
            chunk = handle.read()
        complete, _, _ = chunk.rpartition("\n")
        if not complete:
            return
        self._offset += len(complete) + 1
        for raw in complete.splitlines():
            line: dict[str, Any] = json.loads(raw)
            assignment = Assignment({(d, r): tuple(hosts) for d, r, hosts in line["slots"]})
            for nodeid in line["tests"]:
                self._by_test[nodeid] = (str(line["topology"]), assignment)

    def get(self, nodeid: str, topology: str) -> Assignment | None:
        """The hosts the scheduler gave test ``nodeid``, or None when it gave none (e.g. not scheduled by pools)."""
        if nodeid not in self._by_test:
            self._read_new_lines()
        found = self._by_test.get(nodeid)
        if found is None or found[0] != topology:
            return None
        return found[1]
