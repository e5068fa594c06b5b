"""The pool scheduler's pytest and xdist hooks: on the controller, and on each worker.

``plugin.pytest_configure`` calls :func:`register`; the plugin objects registered here are inert
unless pytest-xdist runs with ``--dist load`` (what ``-n N`` alone gives) and an inventory.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

import pytest

from ..stash import ASSIGNMENT_KEY, MARK_KEY
from .groups import GroupSuffix
from .scheduler import PoolScheduling
from .worker import Placements, write_collection

if TYPE_CHECKING:
    from ...topology import Topology
    from ..session.session import MultihostSession

__all__ = ["register"]

RUN_DIR = "mh_pool_dir"
"""The ``workerinput`` key of the run directory shared by the controller and its workers."""


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
        for item in session.items:
            mark = item.stash.get(MARK_KEY, None)
            usable = mark is not None and not isinstance(self._session.resolve(mark), str)
            tests[item.nodeid] = mark.name if usable and mark is not None else None
            if usable and mark is not None:
                topologies[mark.name] = mark.topology
        write_collection(self._run_dir, self._worker, tests, topologies)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        mark = item.stash.get(MARK_KEY, None)
        if mark is None:
            return
        assignment = self._placements.get(item.nodeid, mark.name)
        if assignment is not None:
            item.stash[ASSIGNMENT_KEY] = assignment
