"""``MultihostItemData``: a test's topology mark and outcome, readable from the item (custom markers, hooks)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from .._private.stash import MARK_KEY

if TYPE_CHECKING:
    from .. import TopologyMark
    from .config import MultihostConfig

__all__ = ["MULTIHOST_KEY", "MultihostItemData"]

ITEM_DATA_KEY = pytest.StashKey["MultihostItemData"]()
MULTIHOST_KEY = pytest.StashKey["MultihostConfig | None"]()
"""The session's :class:`MultihostConfig` in ``config.stash`` (set when the registry is filled)."""

# The topology mark is the test's parameter of this name (see the plugin's parametrization).
_PARAM = "mh_topology_mark"


class MultihostItemData:
    """What pytest-mh attaches to each test item: ``multihost``, ``topology_mark``, ``outcome``, ``result``.

    Available from collection on (``pytest_collection_modifyitems``, ``pytest_runtest_setup``):

    Example::

        def pytest_runtest_setup(item):
            data = MultihostItemData.GetData(item)
            if data is not None and data.topology_mark is not None and data.topology_mark.name == "ldap":
                ...

    :ivar outcome: ``"passed"``, ``"failed"``, ``"skipped"``, ``"error"`` or ``"unknown"`` (not run yet).
    :ivar result: The call phase's ``pytest.TestReport``, once it ran.
    """

    def __init__(self, multihost: MultihostConfig | None, topology_mark: TopologyMark | None) -> None:
        self.multihost = multihost
        self.topology_mark = topology_mark
        self.outcome: str = "unknown"
        self.result: pytest.TestReport | None = None

    @staticmethod
    def SetData(item: pytest.Item, data: MultihostItemData | None) -> None:
        if data is None:
            if ITEM_DATA_KEY in item.stash:
                del item.stash[ITEM_DATA_KEY]
        else:
            item.stash[ITEM_DATA_KEY] = data

    @staticmethod
    def GetData(item: pytest.Item) -> MultihostItemData | None:
        """The item's data (made on first request from its topology parameter)."""
        data = item.stash.get(ITEM_DATA_KEY, None)
        if data is None:
            data = MultihostItemData(item.config.stash.get(MULTIHOST_KEY, None), _mark(item))
            item.stash[ITEM_DATA_KEY] = data
        return data


def _mark(item: pytest.Item) -> Any:
    mark = item.stash.get(MARK_KEY, None)
    if mark is not None:
        return mark
    callspec = getattr(item, "callspec", None)
    return callspec.params.get(_PARAM) if callspec is not None else None
