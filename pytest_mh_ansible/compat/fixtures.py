"""pytest-mh's ``mh`` object and fixtures: ``MultihostFixture`` with ``data``, ``multihost``, ``logger``, ...

The ``mh`` fixture itself, ``mh_topology``, ``mh_topology_mark`` and ``mh_topology_name`` are the
project's (its plugin sets the topology up); ``mh_config`` and ``mh_logger`` are the layer's.
All six are importable from ``pytest_mh``, as in pytest-mh.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .. import MultihostFixture as _MultihostFixture
from .._private.reporting.artifacts import test_directory
from .itemdata import MULTIHOST_KEY, MultihostItemData
from .logger import MultihostLogger

if TYPE_CHECKING:
    from .config import MultihostConfig

__all__ = ["MultihostFixture", "mh_config", "mh_logger"]


class MultihostFixture(_MultihostFixture):
    """pytest-mh's ``mh`` object: the project's, with ``data``, ``multihost``, ``logger``, ``log_phase``, ...

    Example::

        def test_example(mh: MultihostFixture):
            mh.log_phase("AFTER ENROLL")
            client = mh._lookup("test.client[0]")
            assert mh.data.topology_mark.name == mh.topology_mark.name
            mh.multihost.config["custom"]       # the suite's MultihostConfig
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._skipped = False
        super().__init__(*args, **kwargs)

    @property
    def data(self) -> MultihostItemData | None:
        """The test's :class:`MultihostItemData` (topology mark, outcome, result)."""
        if self.request is None:
            return None
        return MultihostItemData.GetData(self.request.node)

    @property
    def multihost(self) -> MultihostConfig | None:
        """The suite's :class:`MultihostConfig` of the session (None without ``config_class``)."""
        if self.request is None:
            return None
        return self.request.config.stash.get(MULTIHOST_KEY, None)

    @property
    def logger(self) -> MultihostLogger:
        """The session's :class:`MultihostLogger` (the config's)."""
        multihost = self.multihost
        return multihost.logger if multihost is not None else MultihostLogger.GetLogger()

    def log_phase(self, phase: str) -> None:
        """Log the start of a phase of the test: ``<phase> :: <node id>``."""
        nodeid = self.request.node.nodeid if self.request is not None else self.topology_name
        self.logger.phase(f"{phase} :: {nodeid}")

    def split_log_file(self, name: str) -> None:
        """Move the records logged so far into file ``name`` of the test's artifacts directory.

        The file is written at the end of the test when ``--mh-collect-artifacts`` asks for the
        test's artifacts (see :meth:`MultihostLogger.split`).
        """
        nodeid = self.request.node.nodeid if self.request is not None else self.topology_name
        self.logger.split(test_directory(nodeid) / Path(name))

    def _skip(self) -> bool:
        """Whether the test was skipped by its controller or a ``require`` marker (pytest-mh's private check).

        The project's plugin runs both checks before the topology is set up, so a running test was not.
        """
        return self._skipped


@pytest.fixture
def mh_config(request: pytest.FixtureRequest) -> MultihostConfig | None:
    """pytest-mh's session configuration object (the suite's ``MultihostConfig``), or None without one."""
    return request.config.stash.get(MULTIHOST_KEY, None)


@pytest.fixture
def mh_logger(request: pytest.FixtureRequest) -> MultihostLogger:
    """pytest-mh's logger: the session's :class:`MultihostLogger` (its records go to the test's log)."""
    multihost: MultihostConfig | None = request.config.stash.get(MULTIHOST_KEY, None)
    return multihost.logger if multihost is not None else MultihostLogger.GetLogger()
