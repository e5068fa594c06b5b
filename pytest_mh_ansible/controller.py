"""Topology controllers: set a topology up before its group of tests and down after it."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import MultihostError

if TYPE_CHECKING:
    from .host import MultihostHost
    from .marks import TopologyMark

__all__ = ["TopologyController"]

T = TypeVar("T")

HostArgs = dict[str, "MultihostHost | list[MultihostHost]"]
"""The hosts of a topology by fixture name (``client=<host>``, ``servers=[<host>, ...]``)."""
HostSlots = Mapping[tuple[str, str], "list[MultihostHost]"]
"""Every host of a topology by (domain, role), in the order the fixtures index them."""


class TopologyController:
    """Hooks around the group of tests that run on one topology.

    Tests are grouped by topology, so :meth:`topology_setup` runs once before the first
    test of the group and :meth:`topology_teardown` once after its last; :meth:`setup` and
    :meth:`teardown` run around every test, and :meth:`skip` before every test. Each hook gets
    the topology's hosts it names, by the mark's fixture names (``client=<MultihostHost>``); a
    hook with ``**hosts`` gets them all, one that names none gets none.

    A failure in :meth:`topology_setup` makes every test of the topology error with that
    cause; other topologies run on. :meth:`skip` may return a reason to skip a test.

    Example::

        class ReplicaController(TopologyController):
            def topology_setup(self, primary: MultihostHost, replica: MultihostHost) -> None:
                replica.conn.run(f"app-ctl join {primary.hostname}")

            def topology_teardown(self, replica: MultihostHost) -> None:
                replica.conn.run("app-ctl leave")

        REPLICA = TopologyMark("replica", Topology(TopologyDomain("app", primary=1, replica=1)),
                               controller=ReplicaController(),
                               fixtures=dict(primary="app.primary[0]", replica="app.replica[0]"))
    """

    def __init__(self) -> None:
        self._mh_mark: TopologyMark | None = None
        self._mh_hosts: HostArgs = {}
        self._mh_slots: dict[tuple[str, str], list[MultihostHost]] = {}

    @property
    def name(self) -> str:
        """The topology's name ("" until the controller is bound to its topology)."""
        return self._mh_mark.name if self._mh_mark is not None else ""

    @property
    def topology_mark(self) -> TopologyMark | None:
        """The mark the controller runs (None until it is bound)."""
        return self._mh_mark

    @property
    def hosts(self) -> HostArgs:
        """The topology's hosts by fixture name, as the hooks get them."""
        return self._mh_hosts

    def _mh_bind(self, mark: TopologyMark, hosts: HostArgs, *, slots: HostSlots | None = None) -> None:
        """Bind the controller to the hosts of its topology (the session calls this before each topology group).

        :param hosts: The hosts by fixture name.
        :param slots: Every host of the topology by (domain, role), including roles no fixture names.
        """
        self._mh_mark = mark
        self._mh_hosts = dict(hosts)
        self._mh_slots = {key: list(value) for key, value in (slots or {}).items()}

    def _invoke_with_args(self, hook: Callable[..., T]) -> T:
        """Call ``hook`` with the topology's hosts that it names (all of them for ``**kwargs``).

        The session calls every hook through this, as pytest-mh does (its private name is kept for
        frameworks that call it).

        :raises MultihostError: The hook needs a parameter that is not a fixture of the topology.
        """
        return call_with_hosts(hook, self._mh_hosts, f"{self.__mh_describe__()}: {_hook_name(hook)}")

    def skip(self) -> str | None:
        """Return a reason to skip the test about to run (checked before each test), or None."""
        return None

    def topology_setup(self, **hosts: Any) -> None:
        """Prepare the hosts for the topology's tests (once per topology group)."""

    def topology_teardown(self, **hosts: Any) -> None:
        """Undo :meth:`topology_setup` (once per topology group, even after failures)."""

    def setup(self, **hosts: Any) -> None:
        """Run before each test of the topology."""

    def teardown(self, **hosts: Any) -> None:
        """Run after each test of the topology."""

    def __mh_describe__(self) -> str:
        return f"topology controller {type(self).__name__} of {self.name!r}"


def call_with_hosts(hook: Callable[..., T], hosts: Mapping[str, Any], where: str) -> T:
    """Call ``hook`` with the entries of ``hosts`` that its signature names; all of them for ``**kwargs``.

    :param where: Names the hook in the error.
    :raises MultihostError: The hook requires a parameter that ``hosts`` does not have.
    """
    try:
        params = list(inspect.signature(hook).parameters.values())
    except (TypeError, ValueError):  # no signature to read: give everything by name
        return hook(**hosts)
    kind = inspect.Parameter
    if any(param.kind is kind.VAR_KEYWORD for param in params):
        return hook(**hosts)
    arguments: dict[str, Any] = {}
    missing: list[str] = []
    for param in params:
        if param.kind in (kind.VAR_POSITIONAL, kind.POSITIONAL_ONLY):
            if param.kind is kind.POSITIONAL_ONLY and param.default is kind.empty:
                missing.append(param.name)
            continue
        if param.name in hosts:
            arguments[param.name] = hosts[param.name]
        elif param.default is kind.empty:
            missing.append(param.name)
    if missing:
        raise MultihostError(
            f"{where} needs {', '.join(repr(name) for name in missing)}, which the topology does not give "
            f"(its fixtures: {', '.join(sorted(hosts)) or 'none'})"
        )
    return hook(**arguments)


def _hook_name(hook: Callable[..., Any]) -> str:
    return str(getattr(hook, "__name__", None) or repr(hook))
