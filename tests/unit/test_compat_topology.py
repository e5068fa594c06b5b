"""pytest-mh's Topology, TopologyDomain, TopologyMark and topology controllers, as the layer serves them."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_mh_ansible import MultihostBackupHost as CoreBackupHost
from pytest_mh_ansible import MultihostError, TopologyMarkError
from pytest_mh_ansible import MultihostHost as CoreHost
from pytest_mh_ansible import Topology as CoreTopology
from pytest_mh_ansible import TopologyDomain as CoreDomain
from pytest_mh_ansible import TopologyMark as CoreMark
from pytest_mh_ansible.compat import (
    BackupTopologyController,
    KnownTopologyBase,
    KnownTopologyGroupBase,
    Topology,
    TopologyController,
    TopologyDomain,
    TopologyMark,
)


# -- Topology and TopologyDomain ------------------------------------------------------------------
def test_compat_domain__get_of_a_missing_role_raises_key_error() -> None:
    domain = TopologyDomain("test", client=1, ldap=2)
    assert domain.get("ldap") == 2
    with pytest.raises(KeyError):
        domain.get("ad")
    assert domain.count("ad") == 0


def test_compat_domain__str_is_the_export_and_equality_spans_both_classes() -> None:
    domain = TopologyDomain("test", client=1)
    assert str(domain) == "{'id': 'test', 'hosts': {'client': 1}}"
    assert domain == CoreDomain("test", client=1)
    assert domain != TopologyDomain("test", client=2)
    assert hash(domain) == hash(CoreDomain("test", client=1))


def test_compat_domain__id_is_a_keyword_too() -> None:
    assert TopologyDomain(id="test", client=1).id == "test"


def test_compat_topology__domains_list_str_and_missing_domain_message() -> None:
    first, second = TopologyDomain("test", client=1), TopologyDomain("ad", dc=1)
    topology = Topology(first, second)
    assert topology.domains == [first, second]
    assert str(topology) == str([first.export(), second.export()])
    with pytest.raises(KeyError, match='Domain "ipa" was not found'):
        topology.get("ipa")
    assert "ad" in topology
    assert "ipa" not in topology


def test_compat_topology__equal_to_the_core_topology_and_hashable() -> None:
    topology = Topology(TopologyDomain("test", client=1))
    assert topology == CoreTopology(CoreDomain("test", client=1))
    assert {topology: 1}[CoreTopology(CoreDomain("test", client=1))] == 1
    assert topology != Topology(TopologyDomain("test", client=2))
    assert topology.__eq__("test") is NotImplemented


def test_compat_topology__from_multihost_config_counts_roles_per_domain() -> None:
    mhc = {
        "domains": [
            {"id": "test", "hosts": [{"hostname": "a", "role": "client"}, {"hostname": "b", "role": "client"}]},
            {"hosts": [{"hostname": "c", "role": "ldap"}]},
        ]
    }
    topology = Topology.FromMultihostConfig(mhc)
    assert topology == Topology(TopologyDomain("test", client=2), TopologyDomain("default", ldap=1))
    assert isinstance(topology, Topology)
    assert Topology.FromMultihostConfig(None) == Topology()


def test_core_mark__checks_paths_of_a_compat_topology_without_key_error() -> None:
    with pytest.raises(ValueError, match="role 'server'"):
        CoreMark("x", Topology(TopologyDomain("test", client=1)), fixtures={"server": "test.server[0]"})


# -- TopologyMark -----------------------------------------------------------------------------------
def _mark(**fixtures: str) -> TopologyMark:
    return TopologyMark("pair", Topology(TopologyDomain("test", client=1, server=2)), fixtures=fixtures)


def test_compat_mark__paths_are_checked_on_first_use_not_at_creation() -> None:
    mark = TopologyMark("x", Topology(), fixtures={"test": "test.client[0]"})
    assert mark.fixtures == {"test": "test.client[0]"}
    with pytest.raises(ValueError, match="domain 'test'"):
        _ = mark.paths


def test_compat_mark__mapping_args_and_default_controller() -> None:
    mark = _mark(client="test.client[0]", other="test.client[0]", servers="test.server")
    assert mark.mapping == {"test.client[0]": ["client", "other"], "test.server": ["servers"]}
    assert mark.args == {"client", "other", "servers"}
    assert isinstance(mark.controller, TopologyController)
    assert mark.export()["fixtures"] is mark.fixtures


def test_compat_mark__apply_fills_only_given_names_through_lookup() -> None:
    looked: list[str] = []

    class Mh:
        def _lookup(self, path: str) -> Any:
            looked.append(path)
            return f"role at {path}"

    mark = _mark(client="test.client[0]", servers="test.server")
    funcargs: dict[str, Any] = {"client": None, "unrelated": 1}
    mark.apply(Mh(), funcargs)
    assert funcargs == {"client": "role at test.client[0]", "unrelated": 1}
    assert mark.map_fixtures_to_roles(Mh()) == {"client": "role at test.client[0]", "servers": "role at test.server"}


def test_compat_mark__apply_without_lookup_reads_the_namespace() -> None:
    mh = SimpleNamespace(ns=SimpleNamespace(test=SimpleNamespace(client=["c0"], server=["s0", "s1"])))
    mark = _mark(client="test.client[0]", second="test.server[1]", servers="test.server")
    assert mark.map_fixtures_to_roles(mh) == {"client": "c0", "second": "s1", "servers": ["s0", "s1"]}
    with pytest.raises(LookupError, match=r"test\.server\[5\]"):
        _mark(bad="test.server[5]").map_fixtures_to_roles(mh)


class _Known(KnownTopologyBase):
    A = TopologyMark("a", Topology(TopologyDomain("test", client=1)), fixtures={"client": "test.client[0]"})
    B = TopologyMark("b", Topology(TopologyDomain("test", server=1)), fixtures={"server": "test.server[0]"})


class _Group(KnownTopologyGroupBase):
    AB = [_Known.A, _Known.B]


class _Node:
    """A test item as the marks see it."""

    def __init__(self, *decorators: pytest.MarkDecorator) -> None:
        self.nodeid = "test_x.py::test_y"
        self.originalname = "test_y"
        self.parent = SimpleNamespace(nodeid="test_x.py")
        self._markers = [d.mark for d in decorators]

    def iter_markers(self, name: str | None = None) -> Any:
        return iter([m for m in self._markers if name is None or m.name == name])


def test_compat_mark__expand_markers_splits_lists_and_groups() -> None:
    node = _Node(pytest.mark.topology(_Group.AB), pytest.mark.topology([_Known.B]), pytest.mark.topology("x"))
    expanded = TopologyMark.ExpandMarkers(node)  # type: ignore[arg-type]
    assert [m.args[0] for m in expanded] == [_Known.A, _Known.B, _Known.B, "x"]
    with pytest.raises(TypeError, match="Expected TopologyMark or KnownTopologyBase"):
        TopologyMark.ExpandMarkers(_Node(pytest.mark.topology(["nope"])))  # type: ignore[arg-type]


def test_compat_mark__create_from_mark_known_topology_and_arguments() -> None:
    node: Any = _Node()
    assert TopologyMark.Create(node, pytest.mark.topology(_Known.A).mark) is _Known.A.value
    assert TopologyMark.Create(node, pytest.mark.topology(_Known.A.value).mark) is _Known.A.value
    controller: TopologyController[Any] = TopologyController()
    made = TopologyMark.Create(
        node, pytest.mark.topology("n", Topology(), controller=controller, fixtures={"c": "t.c[0]"}).mark
    )
    assert (made.name, made.controller, made.fixtures) == ("n", controller, {"c": "t.c[0]"})
    with pytest.raises(ValueError, match=r"test_x.py::test_y: invalid arguments for @pytest.mark.topology"):
        TopologyMark.Create(node, pytest.mark.topology().mark)
    with pytest.raises(ValueError):
        TopologyMark.CreateFromArgs(node, ("n", Topology(), controller), {})


def test_compat_mark__expand_uses_a_subclass_create_from_args() -> None:
    class ThreeArgMark(TopologyMark):
        domains: dict[str, str] = {}

        @classmethod
        def CreateFromArgs(cls, item: Any, args: tuple[Any, ...], kwargs: Any) -> ThreeArgMark:
            mark = cls(args[0], args[1], fixtures=dict(kwargs.get("fixtures", {})))
            mark.domains = args[2]
            return mark

    node = _Node(pytest.mark.topology("ad", Topology(TopologyDomain("test", dc=1)), {"test": "ad"}))
    (mark,) = ThreeArgMark.expand(node, default_domain="test")
    assert isinstance(mark, ThreeArgMark)
    assert mark.domains == {"test": "ad"}


def test_compat_mark__expand_errors_name_the_test_once() -> None:
    with pytest.raises(TopologyMarkError) as info:
        TopologyMark.expand(_Node(pytest.mark.topology("only-a-name")), default_domain="test")
    assert str(info.value).count("test_x.py::test_y") == 1
    assert "invalid arguments for @pytest.mark.topology" in str(info.value)


def test_compat_mark__expand_checks_fixture_paths_naming_the_test() -> None:
    bad = TopologyMark("bad", Topology(TopologyDomain("test", client=1)), fixtures={"server": "test.server[0]"})
    with pytest.raises(TopologyMarkError, match=r"test_x.py::test_y: topology 'bad': fixture 'server'"):
        TopologyMark.expand(_Node(pytest.mark.topology(bad)), default_domain="test")


def test_compat_mark__expand_keeps_the_shorthand_and_unites_repeats() -> None:
    node = _Node(pytest.mark.topology(_Known.A), pytest.mark.topology([_Known.A, _Known.B]), pytest.mark.topology(x=1))
    marks = TopologyMark.expand(node, default_domain="test")
    assert [m.name for m in marks] == ["a", "b", "x1"]
    assert isinstance(marks[2], TopologyMark)


# -- TopologyController -------------------------------------------------------------------------------
class _Host(CoreHost):
    def __init__(self, name: str, config: Any = None) -> None:
        super().__init__(name, roles=("client",), domain="test", variables={})
        self.mh_domain = SimpleNamespace(mh_config=config)


class _BackupHost(CoreBackupHost):
    def __init__(self, name: str, calls: list[tuple[str, Any]], fail: bool = False) -> None:
        super().__init__(name, roles=("server",), domain="test", variables={})
        self.calls, self.fail = calls, fail
        self.backup_data = f"vanilla-{name}"

    def backup(self) -> Any:  # type: ignore[override]  # pytest-mh's contract
        self.calls.append(("backup", self.name))
        return f"topo-{self.name}"

    def restore(self, backup_data: Any) -> None:  # type: ignore[override]
        self.calls.append(("restore", backup_data))
        if self.fail:
            raise OSError(f"{self.name} cannot restore")

    def remove_backup(self, backup_data: Any) -> None:  # type: ignore[override]
        self.calls.append(("remove", backup_data))


def _bind(controller: Any, mark: CoreMark, **slots: list[Any]) -> None:
    by_slot = {("test", role): hosts for role, hosts in slots.items()}
    args = {
        name: by_slot[(p.domain, p.role)] if p.index is None else by_slot[(p.domain, p.role)][p.index]
        for name, p in mark.paths.items()
    }
    controller._mh_bind(mark, args, slots=by_slot)


def test_compat_controller__properties_need_init() -> None:
    controller: TopologyController[Any] = TopologyController()
    for name in ("name", "topology", "multihost", "logger", "ns", "hosts"):
        with pytest.raises(RuntimeError, match="not been initialized"):
            getattr(controller, name)


def test_compat_controller__bind_calls_init_once_with_pytest_mh_arguments() -> None:
    calls: list[tuple[Any, ...]] = []
    config = SimpleNamespace(logger="config logger", provisioned_topologies=["pair"])

    class Provisioned(TopologyController[Any]):
        def init(self, *args: Any, **kwargs: Any) -> None:
            calls.append(args)
            super().init(*args, **kwargs)
            self.provisioned = self.name in self.multihost.provisioned_topologies

        def set_artifacts(self, client: Any) -> None:
            self.artifacts.test[client] = {"/var/log/x"}

    controller = Provisioned()
    mark = TopologyMark(
        "pair",
        Topology(TopologyDomain("test", client=1, server=1)),
        controller=controller,
        fixtures={"client": "test.client[0]"},
    )
    client, server = _Host("client1", config), _Host("server1", config)
    _bind(controller, mark, client=[client], server=[server])
    _bind(controller, mark, client=[client], server=[server])
    assert calls == [("pair", config, "config logger", mark.topology, {"client": "test.client[0]"})]
    assert controller.provisioned is True
    assert controller.hosts == [client, server]
    assert controller.ns.test.server == [server]
    assert controller.get_artifacts_list(client, "test") == {"/var/log/x"}
    assert controller.get_artifacts_list(server, "test") == set()


def test_compat_controller__init_by_hand_takes_the_first_hosts_of_each_role() -> None:
    hosts = [_Host("c2"), _Host("c1"), _Host("c3")]
    domain = SimpleNamespace(id="test", roles=["client"], hosts_by_role=lambda role: hosts)
    config = SimpleNamespace(domains=[domain], logger=None)
    controller: TopologyController[Any] = TopologyController()
    topology = Topology(TopologyDomain("test", client=2))
    controller.init("two", config, "logger", topology, {"first": "test.client[0]", "both": "test.client"})
    assert controller.hosts == [hosts[1], hosts[0]]
    seen: list[Any] = []
    controller._invoke_with_args(lambda first, both: seen.append((first, both)))
    assert seen == [(hosts[0], hosts[:2])]


def test_controller__hooks_get_only_the_hosts_they_name() -> None:
    seen: list[Any] = []

    class Subset(TopologyController[Any]):
        def topology_setup(self, server: Any) -> None:
            seen.append(("topology_setup", server))

        def setup(self) -> None:
            seen.append(("setup",))

        def teardown(self, **kwargs: Any) -> None:
            seen.append(("teardown", sorted(kwargs)))

        def skip(self, client: Any, missing: Any) -> str | None:
            return None

    controller = Subset()
    mark = TopologyMark(
        "pair",
        Topology(TopologyDomain("test", client=1, server=1)),
        controller=controller,
        fixtures={"client": "test.client[0]", "server": "test.server[0]"},
    )
    client, server = _Host("client1"), _Host("server1")
    _bind(controller, mark, client=[client], server=[server])
    for hook in (controller.topology_setup, controller.setup, controller.teardown):
        controller._invoke_with_args(hook)
    assert seen == [("topology_setup", server), ("setup",), ("teardown", ["client", "server"])]
    with pytest.raises(MultihostError, match=r"Subset of 'pair': skip needs 'missing'.*client, server"):
        controller._invoke_with_args(controller.skip)


def test_core_controller__hooks_get_only_the_hosts_they_name() -> None:
    from pytest_mh_ansible import TopologyController as CoreController

    seen: list[Any] = []

    class Core(CoreController):
        def topology_setup(self, *, client: Any) -> None:
            seen.append(client)

    controller = Core()
    mark = CoreMark(
        "c",
        CoreTopology(CoreDomain("app", client=1, server=1)),
        fixtures={"client": "app.client[0]", "server": "app.server[0]"},
    )
    controller._mh_bind(mark, {"client": "C", "server": "S"})
    controller._invoke_with_args(controller.topology_setup)
    assert seen == ["C"]
    assert controller.hosts == {"client": "C", "server": "S"}
    assert controller.name == "c"


# -- BackupTopologyController ----------------------------------------------------------------------
def _backup_setup(controller: Any) -> tuple[list[tuple[str, Any]], list[_BackupHost]]:
    calls: list[tuple[str, Any]] = []
    hosts = [_BackupHost("server1", calls), _BackupHost("server2", calls)]
    mark = TopologyMark(
        "srv", Topology(TopologyDomain("test", server=2)), controller=controller, fixtures={"servers": "test.server"}
    )
    _bind(controller, mark, server=hosts)
    return calls, hosts


def test_compat_backup_controller__backs_up_restores_and_returns_to_vanilla() -> None:
    controller: BackupTopologyController[Any] = BackupTopologyController()
    calls, hosts = _backup_setup(controller)
    controller._invoke_with_args(controller.topology_setup)
    assert controller.backup_data == {hosts[0]: "topo-server1", hosts[1]: "topo-server2"}
    controller._invoke_with_args(controller.teardown)
    controller._invoke_with_args(controller.topology_teardown)
    assert calls == [
        ("backup", "server1"), ("backup", "server2"),
        ("restore", "topo-server1"), ("restore", "topo-server2"),
        ("remove", "topo-server1"), ("remove", "topo-server2"),
        ("restore", "vanilla-server1"), ("restore", "vanilla-server2"),
    ]  # fmt: skip


def test_compat_backup_controller__restore_tries_every_host_and_groups_errors() -> None:
    controller: BackupTopologyController[Any] = BackupTopologyController()
    calls, hosts = _backup_setup(controller)
    hosts[0].fail = True
    with pytest.raises(ExceptionGroup) as info:
        controller.restore({hosts[0]: "a", hosts[1]: "b", "not a host": "c"})  # type: ignore[dict-item]
    assert [str(e) for e in info.value.exceptions] == ["server1 cannot restore"]
    assert calls == [("restore", "a"), ("restore", "b")]


def test_compat_backup_controller__restore_vanilla_on_error_restores_then_reraises() -> None:
    class Failing(BackupTopologyController[Any]):
        @BackupTopologyController.restore_vanilla_on_error
        def topology_setup(self, servers: Any) -> None:
            self.got = servers
            raise RuntimeError("setup broke")

    controller = Failing()
    calls, hosts = _backup_setup(controller)
    with pytest.raises(RuntimeError, match="setup broke"):
        controller._invoke_with_args(controller.topology_setup)
    with pytest.raises(RuntimeError, match="setup broke"):
        controller.topology_setup(servers="ignored", other=1)  # the hosts come from the topology
    assert controller.got == hosts
    assert calls == [("restore", "vanilla-server1"), ("restore", "vanilla-server2")] * 2
    assert Failing.topology_setup.__name__ == "topology_setup"
