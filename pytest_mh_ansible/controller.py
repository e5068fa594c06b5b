"""Topology controllers: set a topology up before its group of tests and down after it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .host import MultihostHost
    from .marks import TopologyMark

__all__ = ["TopologyController"]


class TopologyController:
    """Hooks around the group of tests that run on one topology.

    Tests are grouped by topology, so :meth:`topology_setup` runs once before the first
    test of the group and :meth:`topology_teardown` once after its last; :meth:`setup` and
    :meth:`teardown` run around every test. Each hook gets the topology's hosts as keyword
    arguments named after the mark's fixtures (``client=<MultihostHost>``).

    A failure in :meth:`topology_setup` makes every test of the topology error with that
    cause; other topologies run on. :meth:`skip` may return a reason to skip the tests.

    Example::

        class ReplicaController(TopologyController):
            def topology_setup(self, *, primary: MultihostHost, replica: MultihostHost) -> None:
                replica.conn.run(f"app-ctl join {primary.hostname}")

            def topology_teardown(self, *, primary: MultihostHost, replica: MultihostHost) -> None:
                replica.conn.run("app-ctl leave")

        REPLICA = TopologyMark("replica", Topology(TopologyDomain("app", primary=1, replica=1)),
                               controller=ReplicaController(),
                               fixtures=dict(primary="app.primary[0]", replica="app.replica[0]"))
    """

    def __init__(self) -> None:
        self.name: str = ""
        self.topology_mark: TopologyMark | None = None
        self.hosts: dict[str, MultihostHost | list[MultihostHost]] = {}

    def _mh_bind(self, mark: TopologyMark, hosts: dict[str, MultihostHost | list[MultihostHost]]) -> None:
        """Bind the controller to the topology it runs (called by the plugin before each topology group)."""
        self.name = mark.name
        self.topology_mark = mark
        self.hosts = hosts

    def skip(self) -> str | None:
        """Return a reason to skip the topology's tests (checked after :meth:`topology_setup`), or None."""
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
