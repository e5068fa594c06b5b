"""pytest-mh's ``TopologyMark``: marks read from ``@pytest.mark.topology`` as pytest-mh reads them.

The plugin asks the session's mark class (``MultihostConfig.TopologyMarkClass``) to expand a
test's markers; this class does it with pytest-mh's ``ExpandMarkers`` and ``Create``, so a suite
that overrides ``CreateFromArgs`` (to take more marker arguments) keeps its markers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

import pytest

from .. import KnownTopologyBase, KnownTopologyGroupBase, TopologyMarkError
from .. import TopologyMark as _TopologyMark
from ..marks import FixturePath, MarkedNode, union_topology_marks
from ._controller import TopologyController

if TYPE_CHECKING:
    from .. import Topology
    from .. import TopologyController as _TopologyController

__all__ = ["TopologyMark"]


class TopologyMark(_TopologyMark):
    """pytest-mh's ``TopologyMark(name, topology, *, controller=None, fixtures=None)``.

    Fixture paths are checked when a test is collected with the mark, not when the mark is made
    (pytest-mh checks them when it looks them up); ``fixtures`` is the dict given, and ``mapping``
    maps each path to the fixtures that name it.

    Example (a suite's mark that takes a third marker argument)::

        class MyTopologyMark(TopologyMark):
            def __init__(self, name, topology, *, controller=None, fixtures=None, domains=None):
                super().__init__(name, topology, controller=controller, fixtures=fixtures)
                self.domains = domains or {}

            @classmethod
            def CreateFromArgs(cls, item, args, kwargs):
                name, topology, *rest = args
                return cls(name, topology, controller=kwargs.get("controller"),
                           fixtures=dict(kwargs.get("fixtures", {})), domains=rest[0] if rest else None)
    """

    def __init__(
        self,
        name: str,
        topology: Topology,
        *,
        controller: _TopologyController | None = None,
        fixtures: dict[str, str] | None = None,
    ) -> None:
        super().__init__(name, topology, controller=controller, fixtures=fixtures)
        self.fixtures = fixtures if fixtures is not None else {}
        self.mapping: dict[str, list[str]] = {}
        for fixture, path in self.fixtures.items():
            self.mapping.setdefault(path, []).append(fixture)

    def _default_controller(self) -> _TopologyController:
        return TopologyController()

    def _check_fixtures(self) -> None:
        """Nothing when the mark is made: ``paths`` checks them when the session first uses the mark."""

    @property
    def args(self) -> set[str]:
        """The names of the topology's fixtures."""
        return set(self.fixtures)

    def apply(self, mh: Any, funcargs: dict[str, Any]) -> None:
        """Give each topology fixture in ``funcargs`` its role object (or list), looked up by path in ``mh``.

        :param mh: The ``mh`` fixture (``MultihostFixture``).
        :param funcargs: Fixture name to value; only names already in it are filled.
        """
        for path, names in self.mapping.items():
            value = _lookup(mh, path)
            for name in names:
                if name in funcargs:
                    funcargs[name] = value

    def map_fixtures_to_roles(self, mh: Any) -> dict[str, Any]:
        """Every topology fixture with its role object (or list of them) in ``mh``."""
        funcargs: dict[str, Any] = dict.fromkeys(self.fixtures)
        self.apply(mh, funcargs)
        return {name: value for name, value in funcargs.items() if value is not None}

    def export(self) -> dict[str, Any]:
        """``{"name": ..., "fixtures": {...}, "topology": [...]}``, for JSON or YAML."""
        return {"name": self.name, "fixtures": self.fixtures, "topology": self.topology.export()}

    @classmethod
    def ExpandMarkers(cls, item: pytest.Item) -> list[pytest.Mark]:
        """The test's topology markers, a list or ``KnownTopologyGroupBase`` member split into one marker each.

        :raises TypeError: A list holds something other than a ``TopologyMark`` or ``KnownTopologyBase`` member.
        """
        expanded: list[Any] = []
        for marker in item.iter_markers("topology"):
            value = marker.args[0] if marker.args else None
            if isinstance(value, KnownTopologyGroupBase) and isinstance(value.value, list):
                expanded.extend(_one_marker_each(value.value))
            elif isinstance(value, list):
                expanded.extend(_one_marker_each(value))
            else:
                expanded.append(marker)
        return expanded

    @classmethod
    def Create(cls, item: pytest.Function, mark: pytest.Mark) -> Self:
        """The mark of one ``@pytest.mark.topology`` marker: a mark, a ``KnownTopologyBase`` member, or arguments.

        :raises ValueError: The marker's arguments are invalid.
        """
        error = f"{_where(item)}: invalid arguments for @pytest.mark.topology: {tuple(mark.args)!r}"
        if not mark.args or len(mark.args) > 3:
            raise ValueError(error)
        first = mark.args[0]
        if isinstance(first, cls):
            return first
        if isinstance(first, KnownTopologyBase):
            if len(mark.args) != 1 or not isinstance(first.value, cls):
                raise ValueError(error)
            return first.value
        return cls.CreateFromArgs(item, mark.args, mark.kwargs)

    @classmethod
    def CreateFromArgs(cls, item: pytest.Function, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Self:
        """A mark from ``@pytest.mark.topology(name, topology, *, controller=..., fixtures=...)``.

        Override it (in a subclass made known by ``MultihostConfig.TopologyMarkClass``) to take
        more marker arguments.

        :raises ValueError: Not exactly two positional arguments.
        """
        if len(args) != 2:
            raise ValueError(f"{_where(item)}: invalid arguments for @pytest.mark.topology: {tuple(args)!r}")
        fixtures = {str(key): str(value) for key, value in (kwargs.get("fixtures") or {}).items()}
        return cls(args[0], args[1], controller=kwargs.get("controller"), fixtures=fixtures)

    @classmethod
    def expand(cls, node: MarkedNode, *, default_domain: str) -> list[_TopologyMark]:
        """Every topology of a test, read with :meth:`ExpandMarkers` and :meth:`Create` (pytest-mh's way).

        The shorthand ``@pytest.mark.topology(role=count, ...)`` of this project still works.

        :raises TopologyMarkError: naming the test when a marker is invalid.
        """
        found: list[_TopologyMark] = []
        try:
            for marker in cls.ExpandMarkers(node):  # type: ignore[arg-type]
                if not marker.args and marker.kwargs:
                    found.extend(super().expand(_OneMarker(node.nodeid, marker), default_domain=default_domain))
                else:
                    found.append(cls.Create(node, marker))  # type: ignore[arg-type]
            for mark in found:
                _ = mark.paths  # a path the topology cannot give fails the test's collection, naming it
        except (TypeError, ValueError) as err:
            message = str(err)
            prefix = f"{_where(node)}: "
            raise TopologyMarkError(node.nodeid, message.removeprefix(prefix)) from None
        return union_topology_marks(node.nodeid, found)


class _OneMarker:
    """One marker of a test, for this project's own reading of the shorthand."""

    def __init__(self, nodeid: str, marker: Any) -> None:
        self.nodeid = nodeid
        self._marker = marker

    def iter_markers(self, name: str | None = None) -> Any:
        return iter([self._marker])


def _one_marker_each(values: list[Any]) -> list[pytest.MarkDecorator]:
    markers: list[pytest.MarkDecorator] = []
    for value in values:
        if not isinstance(value, _TopologyMark | KnownTopologyBase):
            raise TypeError(f"Expected TopologyMark or KnownTopologyBase, got {type(value)}")
        markers.append(pytest.mark.topology(value))
    return markers


def _where(item: Any) -> str:
    """``tests/test_x.py::test_y``, as pytest-mh names a test in marker errors."""
    parent = getattr(item, "parent", None)
    nodeid = getattr(parent, "nodeid", "") if parent is not None else ""
    return f"{nodeid}::{getattr(item, 'originalname', getattr(item, 'name', '?'))}"


def _lookup(mh: Any, path: str) -> Any:
    """The role object (or list) at ``path`` in ``mh``: its ``_lookup``, else its ``ns``."""
    lookup = getattr(mh, "_lookup", None)
    if callable(lookup):
        return lookup(path)
    parsed = FixturePath.parse(path)
    try:
        roles = getattr(getattr(mh.ns, parsed.domain), parsed.role)
        return roles if parsed.index is None else roles[parsed.index]
    except (AttributeError, IndexError):
        raise LookupError(f'Name "{path}" does not exist') from None
