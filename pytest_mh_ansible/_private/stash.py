"""The plugin's keys into pytest's stashes, in one place for the plugin and the private parts that read them.

Per-run state lives in ``config.stash`` and per-test state in ``item.stash`` (never in ad hoc
attributes); reporting and the crash check read what the plugin stored here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..marks import TopologyMark
    from ..multihost import MultihostFixture
    from ..registry import Registry
    from .session.session import MultihostSession

__all__ = [
    "FIXTURES_KEY",
    "FIXTURE_KEY",
    "LAB_KEY",
    "MARK_KEY",
    "NO_INVENTORY_KEY",
    "REGISTRY_KEY",
    "SESSION_KEY",
    "TOPOLOGY_NAMES_KEY",
]

SESSION_KEY: pytest.StashKey[MultihostSession] = pytest.StashKey()
"""``config.stash``: the session, when an inventory was given."""

NO_INVENTORY_KEY: pytest.StashKey[str] = pytest.StashKey()
"""``config.stash``: why topology tests are skipped (no inventory)."""

FIXTURES_KEY: pytest.StashKey[set[str]] = pytest.StashKey()
"""``config.stash``: the role fixture names registered so far."""

REGISTRY_KEY: pytest.StashKey[Registry] = pytest.StashKey()
"""``config.stash``: the project's registrations when there is no session (no inventory), for its mark class."""

TOPOLOGY_NAMES_KEY: pytest.StashKey[dict[str, tuple[str, TopologyMark]]] = pytest.StashKey()
"""``config.stash``: each topology name seen at collection, with the first test that used it and its mark."""

LAB_KEY: pytest.StashKey[Any] = pytest.StashKey()
"""``config.stash``: the lab brought up by ``--mh-lab`` (the controller tears it down)."""

MARK_KEY: pytest.StashKey[TopologyMark] = pytest.StashKey()
"""``item.stash``: the topology mark a test runs with."""

FIXTURE_KEY: pytest.StashKey[MultihostFixture] = pytest.StashKey()
"""``item.stash``: the test's ``mh`` object, once set up."""
