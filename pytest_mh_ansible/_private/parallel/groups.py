"""``--dist loadgroup``: each topology's tests carry an ``xdist_group`` mark, and the group reaches xdist.

The plugin gives every topology test the mark ``xdist_group("mh-<topology>")`` when it is
parametrized (plugin.pytest_generate_tests), so that the mark exists when xdist's worker turns
group marks into node-id suffixes (``test_x[pair]@mh-pair``), which its loadgroup scheduler reads.

On pytest versions whose node ids are structured (``Node._id``, pytest 9.2), xdist 3.8 still
writes the old ``_nodeid`` attribute and the suffix is lost (pytest-dev/pytest-xdist#1386):
every test becomes its own group. :class:`GroupSuffix` sets the suffix on such pytest versions,
for the plugin's own tests only, and does nothing where xdist's suffix took effect.
"""

from __future__ import annotations

from typing import Any, final

import pytest

from ..stash import MARK_KEY

__all__ = ["GroupSuffix", "group_name"]


def group_name(topology: str) -> str:
    """The xdist group of a topology's tests."""
    return f"mh-{topology}"


@final
class GroupSuffix:
    """Appends ``@mh-<topology>`` to a topology test's node id where xdist could not (loadgroup only)."""

    @pytest.hookimpl(trylast=True)  # after xdist's worker hook, which sets the suffix where it can
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if not config.getvalue("loadgroup"):
            return
        for item in items:
            mark = item.stash.get(MARK_KEY, None)
            if mark is None or "@" in item.nodeid.rpartition("]")[2]:
                continue
            structured: Any = getattr(item, "_id", None)
            if structured is None or not hasattr(type(structured), "parse"):
                continue  # an older pytest: xdist's own suffix applies (or the test has other groups)
            gnames = sorted(
                {
                    str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                    for m in item.iter_markers("xdist_group")
                }
            )
            item._id = type(structured).parse(f"{item.nodeid}@{'_'.join(gnames)}")
