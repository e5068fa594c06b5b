"""The ``mh`` fixture object: the topology, roles and hosts of the running test."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Unpack

from ._private.teardown import TeardownStack
from .errors import MultihostError
from .host import MultihostHost
from .role import MultihostRole

if TYPE_CHECKING:
    import pytest

    from ._private.ansible.playbooks import PlaybookRunner
    from ._private.session.session import ActiveTopology
    from .controller import TopologyController
    from .marks import TopologyMark
    from .playbook import PlaybookOptions, PlaybookResult
    from .topology import Topology

__all__ = ["MultihostFixture"]


class MultihostFixture:
    """What the ``mh`` fixture gives a test: its topology, roles and hosts.

    Example::

        @pytest.mark.topology(KnownTopology.ClientServer)
        def test_all(mh):
            assert mh.topology_name == "client-server"
            for role in mh.roles:
                role.host.conn.run("true")
            server = mh.ns.app.server[0]

    The pytest-mh compatibility layer makes a subclass of it (see ``Registry.fixture_class``).

    :ivar request: The ``mh`` fixture's pytest request (None when made outside a test).
    :ivar topology_controller: The topology mark's controller.
    """

    def __init__(
        self,
        active: ActiveTopology,
        role_factory: Callable[[MultihostFixture, str, MultihostHost], MultihostRole[Any]],
        playbooks: PlaybookRunner,
        request: pytest.FixtureRequest | None = None,
    ) -> None:
        self._active = active
        self._playbooks = playbooks
        self.request = request
        self.topology_mark: TopologyMark = active.mark
        self.topology: Topology = active.mark.topology
        self.topology_controller: TopologyController = active.mark.controller
        self.topology_name: str = active.mark.name
        self.roles: list[MultihostRole[Any]] = []
        self._by_slot: dict[tuple[str, str], list[MultihostRole[Any]]] = {}
        self._paths: dict[str, MultihostRole[Any] | list[MultihostRole[Any]]] = {}
        for (domain, role), hosts in active.hosts_by_slot.items():
            objects = [role_factory(self, role, host) for host in hosts]
            self._by_slot[(domain, role)] = objects
            self._paths[f"{domain}.{role}"] = objects
            self._paths.update({f"{domain}.{role}[{index}]": each for index, each in enumerate(objects)})
            self.roles.extend(objects)
        self.hosts: list[MultihostHost] = [role.host for role in self.roles]
        self.ns = SimpleNamespace(
            **{
                domain.id: SimpleNamespace(**{role: self._by_slot[(domain.id, role)] for role in domain.roles})
                for domain in self.topology
            }
        )
        self._teardown = TeardownStack()

    def fixture(self, name: str) -> MultihostRole[Any] | list[MultihostRole[Any]]:
        """The role object (or list) that the topology mark maps fixture ``name`` to."""
        path = self.topology_mark.paths.get(name)
        if path is None:
            raise MultihostError(
                f"topology {self.topology_name!r} has no fixture {name!r} "
                f"(it has: {', '.join(self.topology_mark.paths) or 'none'})"
            )
        roles = self._by_slot[(path.domain, path.role)]
        return list(roles) if path.index is None else roles[path.index]

    def _lookup(self, path: str) -> MultihostRole[Any] | list[MultihostRole[Any]]:
        """The role objects at topology path ``domain.role`` (a list) or ``domain.role[index]`` (one).

        pytest-mh's private lookup, kept because frameworks use it.

        :raises LookupError: The topology has no such path.
        """
        found = self._paths.get(path)
        if found is None:
            known = ", ".join(self._paths)
            raise LookupError(f"topology {self.topology_name!r} has no path {path!r} (it has: {known})")
        return found

    @property
    def fixtures(self) -> dict[str, MultihostRole[Any] | list[MultihostRole[Any]]]:
        """Every fixture of the topology mark, by name."""
        return {name: self.fixture(name) for name in self.topology_mark.paths}

    def playbook(
        self, path: str, roles: Sequence[MultihostRole[Any]] | None = None, **options: Unpack[PlaybookOptions]
    ) -> PlaybookResult:
        """Run a playbook limited to the hosts of ``roles`` (all roles of the test when None).

        A relative path resolves against pytest's rootdir, then the ini ``mh_playbook_dir``.
        The playbook sees the inventory's variables; its output goes to the test's log. The
        keywords are those of :class:`~pytest_mh_ansible.PlaybookOptions` (as ``role.playbook()``'s).
        A failing playbook raises ``PlaybookError`` (see ``MultihostRole.playbook``).

        Example::

            mh.playbook("playbooks/replicate.yml", [server, replica], extra_vars={"peers": 2})
        """
        hosts = [role.host for role in (self.roles if roles is None else roles)]
        return self._playbooks.run_reverted(path, list(dict.fromkeys(hosts)), **options)

    def _setup(self) -> None:
        """Per-test setup: hosts, controller, role utilities, roles; undone in reverse on failure."""
        stack = self._teardown
        try:
            for host in dict.fromkeys(self.hosts):
                host.setup()
                stack.push(host, host.teardown)
            controller = self.topology_mark.controller
            controller._invoke_with_args(controller.setup)
            stack.push(controller, lambda: controller._invoke_with_args(controller.teardown))
            for role in self.roles:
                for utility in role.utilities:
                    utility.setup()
                    stack.push(utility, utility.teardown)
                role.setup()
                stack.push(role, role.teardown)
        except BaseException:
            stack.unwind(f"teardown after a failed setup of topology {self.topology_name!r}", reraise=False)
            raise

    def _finish(self) -> None:
        """Per-test teardown: everything set up, in reverse order; all failures raised together."""
        self._teardown.unwind(f"teardown of topology {self.topology_name!r}")
