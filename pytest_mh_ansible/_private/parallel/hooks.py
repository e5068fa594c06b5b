"""The options of parallel runs and leases, and the pool scheduler's pytest and xdist hooks.

``plugin.pytest_addoption`` calls :func:`addoption` and ``plugin.pytest_configure`` calls
:func:`lease_options` (the session's lease settings) and :func:`register`. The plugin objects
registered here are inert unless pytest-xdist runs with ``--dist load`` (what ``-n N`` alone
gives) and an inventory.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

import pytest

from ..options import add_flag, add_seconds
from ..session.leases import LeaseOwner
from ..stash import ASSIGNMENT_KEY, MARK_KEY, POOL_KEY
from .groups import GroupSuffix
from .scheduler import PoolScheduling
from .worker import Placements, unit_key, write_collection

if TYPE_CHECKING:
    from ...topology import Topology
    from ..session.session import MultihostSession

__all__ = ["register"]

RUN_DIR = "mh_pool_dir"
"""The ``workerinput`` key of the run directory shared by the controller and its workers."""


RUN_ID = "mh_run_id"
"""The ``workerinput`` key of the run id: the controller's, so that the leases of all workers name one run."""


def addoption(group: pytest.OptionGroup) -> None:
    """The options of parallel runs and leases (in the plugin's option group)."""
    add_flag(
        group,
        "--mh-no-pools",
        help="With -n N, let xdist's own load scheduling run instead of the host pools (see docs/parallel.md).",
    )
    add_seconds(
        group,
        "--mh-lease-timeout",
        default=600.0,
        help="How long to wait for a host that another session leases before the topology errors (default 600).",
    )
    add_seconds(
        group,
        "--mh-lease-ttl",
        default=60.0,
        help="How long a lease lives unless renewed: a killed session's hosts come free after it (default 60).",
    )
    group.addoption(
        "--mh-controller-id",
        dest="mh_controller_id",
        metavar="ID",
        help="This controller's name in the leases on the hosts (default: the machine's host name).",
    )
    add_flag(
        group,
        "--mh-no-leases",
        help="Do not take leases on the hosts (only the per-host lock between this machine's processes).",
    )


def lease_options(config: pytest.Config) -> dict[str, Any]:
    """The session's lease settings (``SessionOptions`` fields) from the command line.

    :raises pytest.UsageError: A bad controller id or a non-positive time.
    """
    if config.getoption("mh_no_leases"):
        return {"lease_owner": None}
    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    run = str(workerinput.get(RUN_ID) or config.stash.setdefault(_RUN_KEY, uuid.uuid4().hex[:12]))
    controller = config.getoption("mh_controller_id") or re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())
    timeout, ttl = float(config.getoption("mh_lease_timeout")), float(config.getoption("mh_lease_ttl"))
    if timeout < 0 or ttl <= 0:
        raise pytest.UsageError(f"--mh-lease-timeout {timeout!r} and --mh-lease-ttl {ttl!r} must be positive")
    try:
        owner = LeaseOwner(str(controller), os.getpid(), run)
    except ValueError as err:
        raise pytest.UsageError(f"--mh-controller-id: {err}") from None
    return {"lease_owner": owner, "lease_ttl": ttl, "lease_timeout": timeout}


_RUN_KEY: pytest.StashKey[str] = pytest.StashKey()


def register(config: pytest.Config, session: MultihostSession) -> None:
    """Register the controller's or the worker's side, when pytest-xdist is there."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is None:
        config.pluginmanager.register(PoolController(config, session), "mh-ansible-pool-controller")
        return
    config.pluginmanager.register(GroupSuffix(), "mh-ansible-group-suffix")
    if workerinput.get(RUN_DIR):
        worker = PoolWorker(session, Path(workerinput[RUN_DIR]), str(workerinput["workerid"]))
        config.pluginmanager.register(worker, "mh-ansible-pool-worker")


def pools_wanted(config: pytest.Config) -> bool:
    return config.getoption("dist", "no") == "load" and not config.getoption("mh_no_pools", False)


@final
class PoolController:
    """Makes xdist schedule (topology, hosts) units (:class:`.scheduler.PoolScheduling`)."""

    def __init__(self, config: pytest.Config, session: MultihostSession) -> None:
        self._config = config
        self._session = session
        self._run_dir: Path | None = None

    @property
    def run_dir(self) -> Path:
        if self._run_dir is None:
            self._run_dir = Path(tempfile.mkdtemp(prefix="pytest-mh-pools-"))
        return self._run_dir

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        owner = self._session.options.lease_owner
        if owner is not None:
            node.workerinput[RUN_ID] = owner.run
        if pools_wanted(self._config):
            node.workerinput[RUN_DIR] = str(self.run_dir)

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> PoolScheduling | None:
        if not pools_wanted(config):
            return None
        from xdist.workermanage import parse_tx_spec_config  # type: ignore[import-untyped]

        return PoolScheduling(config, self.run_dir, self._session.host_infos, len(parse_tx_spec_config(config)))

    def pytest_unconfigure(self) -> None:
        if self._run_dir is not None:
            shutil.rmtree(self._run_dir, ignore_errors=True)


@final
class PoolWorker:
    """Tells the scheduler what each test needs, and gives each test the hosts the scheduler chose."""

    def __init__(self, session: MultihostSession, run_dir: Path, worker: str) -> None:
        self._session = session
        self._run_dir = run_dir
        self._worker = worker
        self._placements = Placements(run_dir, worker)

    @pytest.hookimpl(tryfirst=True)  # before xdist's worker sends the collection to the controller
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        tests: dict[str, str | None] = {}
        topologies: dict[str, Topology] = {}
        pools: dict[str, str | None] = {}
        for item in session.items:
            mark = item.stash.get(MARK_KEY, None)
            pool = item.stash.get(POOL_KEY, None)
            if mark is None or isinstance(self._session.resolve(mark, pool), str):
                tests[item.nodeid] = None  # needs no hosts, or is skipped
                continue
            key = tests[item.nodeid] = unit_key(mark.name, pool)
            topologies[key], pools[key] = mark.topology, pool
        write_collection(self._run_dir, self._worker, tests, topologies, pools)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        mark = item.stash.get(MARK_KEY, None)
        if mark is None:
            return
        assignment = self._placements.get(item.nodeid, unit_key(mark.name, item.stash.get(POOL_KEY, None)))
        if assignment is not None:
            item.stash[ASSIGNMENT_KEY] = assignment
