"""``@pytest.mark.topology``: the topology marks, known topologies and groups, and how marks expand."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from .controller import TopologyController
from .errors import TopologyMarkError
from .topology import Topology, TopologyDomain

__all__ = [
    "FixturePath",
    "KnownTopologyBase",
    "KnownTopologyGroupBase",
    "MarkedNode",
    "TopologyMark",
    "expand_topology_marks",
    "union_topology_marks",
]


class MarkedNode(Protocol):
    """What :meth:`TopologyMark.expand` reads of a test: its node id and its markers (a ``pytest.Function``)."""

    @property
    def nodeid(self) -> str: ...

    def iter_markers(self, name: str | None = None) -> Iterator[Any]: ...


_PATH_RE = re.compile(r"^(?P<domain>[^.\[\]\s]+)\.(?P<role>[^.\[\]\s]+)(?:\[(?P<index>\d+)\])?$")


@dataclass(frozen=True)
class FixturePath:
    """Where a role fixture points: ``"app.client[0]"`` (one role object) or ``"app.client"`` (a list)."""

    domain: str
    role: str
    index: int | None

    @classmethod
    def parse(cls, path: str) -> FixturePath:
        match = _PATH_RE.match(path)
        if match is None:
            raise ValueError(f"{path!r} is not a fixture path of the form 'domain.role' or 'domain.role[index]'")
        index = match.group("index")
        return cls(match.group("domain"), match.group("role"), None if index is None else int(index))

    def __str__(self) -> str:
        suffix = "" if self.index is None else f"[{self.index}]"
        return f"{self.domain}.{self.role}{suffix}"


class TopologyMark:
    """A named topology, the fixtures it gives to tests, and the controller that sets it up.

    Use it directly in ``@pytest.mark.topology(...)``, or as the value of a
    :class:`KnownTopologyBase` member so that many tests share it.

    Example::

        PAIR = TopologyMark(
            "pair",
            Topology(TopologyDomain("app", client=1, server=1)),
            fixtures=dict(client="app.client[0]", server="app.server[0]"),
        )

        @pytest.mark.topology(PAIR)
        def test_ping(client, server): ...

    :param name: The topology name: it becomes the test's parameter id (``test_ping[pair]``).
    :param topology: The hosts the test needs.
    :param controller: Sets the topology up and down; a plain :class:`TopologyController` when omitted.
    :param fixtures: Fixture name to path: ``"domain.role[index]"`` gives one role object,
        ``"domain.role"`` the list of them.
    """

    def __init__(
        self,
        name: str,
        topology: Topology,
        *,
        controller: TopologyController | None = None,
        fixtures: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a topology mark needs a non-empty string name, got {name!r}")
        if not isinstance(topology, Topology):
            raise TypeError(f"topology {name!r}: expected a Topology, got {topology!r}")
        if controller is not None and not isinstance(controller, TopologyController):
            raise TypeError(f"topology {name!r}: controller must be a TopologyController, got {controller!r}")
        self.name = name
        self.topology = topology
        self.controller = controller if controller is not None else self._default_controller()
        self.fixtures: dict[str, str] = {str(k): str(v) for k, v in (fixtures or {}).items()}
        self._check_fixtures()

    def _default_controller(self) -> TopologyController:
        """The controller of a mark made without one (the pytest-mh layer gives its own class)."""
        return TopologyController()

    def _check_fixtures(self) -> None:
        """Check every fixture path when the mark is made, so that a typo fails at import.

        The pytest-mh layer overrides this to do nothing, as pytest-mh checks no path before
        using it; :attr:`paths` then checks them on first use.
        """
        _ = self.paths

    @functools.cached_property
    def paths(self) -> dict[str, FixturePath]:
        """Each fixture's parsed path, checked against the topology.

        :raises ValueError: A path is malformed or names a domain, role or index the topology lacks.
        """
        paths: dict[str, FixturePath] = {}
        for fixture, path in self.fixtures.items():
            try:
                parsed = FixturePath.parse(path)
            except ValueError as err:
                raise ValueError(f"topology {self.name!r}: fixture {fixture!r}: {err}") from None
            self._check_path(fixture, parsed)
            paths[fixture] = parsed
        return paths

    def _check_path(self, fixture: str, path: FixturePath) -> None:
        if path.domain not in self.topology:
            raise ValueError(
                f"topology {self.name!r}: fixture {fixture!r} points to domain {path.domain!r}, "
                f"which the topology does not have ({self.topology.describe()})"
            )
        count = self.topology.get(path.domain).count(path.role)
        if count == 0:
            raise ValueError(
                f"topology {self.name!r}: fixture {fixture!r} points to role {path.role!r}, "
                f"which domain {path.domain!r} does not have ({self.topology.describe()})"
            )
        if path.index is not None and path.index >= count:
            raise ValueError(
                f"topology {self.name!r}: fixture {fixture!r} points to {str(path)!r}, "
                f"but domain {path.domain!r} has only {count} {path.role!r} host(s)"
            )

    @classmethod
    def from_args(cls, nodeid: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> TopologyMark:
        """Create a mark from ad hoc marker arguments: ``topology("name", Topology(...), fixtures=...)``.

        A project that needs more marker fields subclasses :class:`TopologyMark`, overrides
        this classmethod and registers the subclass (see ``pytest_mh_register``).
        """
        if len(args) != 2 or not isinstance(args[0], str) or not isinstance(args[1], Topology):
            raise TopologyMarkError(
                nodeid, f"an ad hoc @pytest.mark.topology takes (name: str, topology: Topology), got {tuple(args)!r}"
            )
        unknown = set(kwargs) - {"controller", "fixtures"}
        if unknown:
            raise TopologyMarkError(nodeid, f"unknown @pytest.mark.topology keyword(s): {', '.join(sorted(unknown))}")
        try:
            return cls(args[0], args[1], controller=kwargs.get("controller"), fixtures=kwargs.get("fixtures"))
        except (TypeError, ValueError) as err:
            raise TopologyMarkError(nodeid, str(err)) from None

    @classmethod
    def from_counts(cls, counts: Mapping[str, Any], *, domain: str) -> TopologyMark:
        """The shorthand ``topology(client=1, server=1)``: one domain, fixtures named after the roles.

        The name joins roles and counts (``client1-server1``); a count of 1 gives the fixture
        one role object, more gives a list.
        """
        name = "-".join(f"{role}{count}" for role, count in counts.items())
        fixtures = {role: f"{domain}.{role}[0]" if count == 1 else f"{domain}.{role}" for role, count in counts.items()}
        return cls(name, Topology(TopologyDomain(domain, **counts)), fixtures=fixtures)

    @classmethod
    def expand(cls, node: MarkedNode, *, default_domain: str) -> list[TopologyMark]:
        """Every topology of a test, from its ``@pytest.mark.topology`` markers (closest first).

        The plugin asks the registered mark class (``registry.topology_mark``), so a subclass may
        read the markers its own way; the pytest-mh layer reads them as pytest-mh does.

        :param node: The test (``metafunc.definition`` at parametrization).
        :param default_domain: The domain of the shorthand ``topology(role=count, ...)``.
        :raises TopologyMarkError: naming the test when a marker is malformed.
        """
        markers = [(marker.args, marker.kwargs) for marker in node.iter_markers("topology")]
        return expand_topology_marks(node.nodeid, markers, default_domain=default_domain, mark_class=cls)

    def export(self) -> dict[str, Any]:
        return {"name": self.name, "fixtures": dict(self.fixtures), "topology": self.topology.export()}

    def __repr__(self) -> str:
        return f"TopologyMark({self.name!r}, {self.topology!r}, fixtures={self.fixtures!r})"


class KnownTopologyBase(Enum):
    """Base of a project's enum of named topologies; each member's value is a :class:`TopologyMark`.

    Example::

        @final
        @unique
        class KnownTopology(KnownTopologyBase):
            Client = TopologyMark("client", Topology(TopologyDomain("app", client=1)),
                                  fixtures=dict(client="app.client[0]"))

        @pytest.mark.topology(KnownTopology.Client)
        def test_client(client): ...
    """

    @property
    def mark(self) -> TopologyMark:
        value = self.value
        if not isinstance(value, TopologyMark):
            raise TypeError(f"{type(self).__name__}.{self.name} must be a TopologyMark, got {value!r}")
        return value


class KnownTopologyGroupBase(Enum):
    """Base of a project's enum of topology groups; each member's value is a list of marks.

    A test marked with a group runs once for each topology of the group.

    Example::

        class KnownTopologyGroup(KnownTopologyGroupBase):
            AnyServer = [KnownTopology.Nginx, KnownTopology.Apache]
    """


def _marks_of(nodeid: str, value: Any, mark_class: type[TopologyMark]) -> list[TopologyMark]:
    if isinstance(value, TopologyMark):
        return [value]
    if isinstance(value, KnownTopologyBase):
        return [value.mark]
    if isinstance(value, KnownTopologyGroupBase):
        return _marks_of(nodeid, list(value.value), mark_class)
    if isinstance(value, list | tuple):
        marks: list[TopologyMark] = []
        for item in value:
            if isinstance(item, list | tuple):
                raise TopologyMarkError(nodeid, f"topology lists cannot nest: {item!r}")
            marks.extend(_marks_of(nodeid, item, mark_class))
        return marks
    raise TopologyMarkError(
        nodeid,
        "@pytest.mark.topology takes a TopologyMark, a KnownTopology member, a KnownTopologyGroup member, "
        f"a list of those, (name, Topology) or role counts, got {value!r}",
    )


def expand_topology_marks(
    nodeid: str,
    markers: Iterable[tuple[Sequence[Any], Mapping[str, Any]]],
    *,
    default_domain: str,
    mark_class: type[TopologyMark] = TopologyMark,
) -> list[TopologyMark]:
    """Turn every ``@pytest.mark.topology`` of a test into its list of topology marks.

    Marks may be stacked at function, class and module level; the union is taken, in
    the order pytest gives them (closest first), without duplicates.

    :param markers: ``(args, kwargs)`` of each topology marker.
    :raises TopologyMarkError: naming ``nodeid`` when a marker is malformed, or two
        different topologies share one name.
    """
    found: list[TopologyMark] = []
    for args, kwargs in markers:
        if not args and kwargs:
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in kwargs.values()):
                raise TopologyMarkError(
                    nodeid, f"@pytest.mark.topology(role=count, ...) takes integer counts, got {dict(kwargs)!r}"
                )
            try:
                marks = [mark_class.from_counts(kwargs, domain=default_domain)]
            except (TypeError, ValueError) as err:
                raise TopologyMarkError(nodeid, str(err)) from None
        elif len(args) == 1 and not kwargs:
            marks = _marks_of(nodeid, args[0], mark_class)
        elif len(args) == 2:
            marks = [mark_class.from_args(nodeid, args, kwargs)]
        else:
            raise TopologyMarkError(
                nodeid, f"invalid arguments for @pytest.mark.topology: args={tuple(args)!r}, kwargs={dict(kwargs)!r}"
            )
        found.extend(marks)
    return union_topology_marks(nodeid, found)


def union_topology_marks(nodeid: str, marks: Iterable[TopologyMark]) -> list[TopologyMark]:
    """``marks`` in order without repeats: one mark per name.

    :raises TopologyMarkError: naming ``nodeid`` when two different topologies share one name.
    """
    result: dict[str, TopologyMark] = {}
    for mark in marks:
        known = result.get(mark.name)
        if known is None:
            result[mark.name] = mark
        elif known is not mark and (known.topology != mark.topology or known.fixtures != mark.fixtures):
            raise TopologyMarkError(
                nodeid,
                f"two different topologies are named {mark.name!r}: "
                f"{known.topology.describe()} and {mark.topology.describe()}",
            )
    return list(result.values())
