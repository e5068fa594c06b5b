"""pytest-mh's topology controllers, ``require`` and markers through the layer, as a suite sees them (pytester).

Hosts are the local-connection hosts of the ``project`` fixture (client1, server1, server2 in domain
``app``); each test writes what the hooks saw to ``events.log``.
"""

from __future__ import annotations

import textwrap

import pytest

INVENTORY = textwrap.dedent("""\
    all:
      vars:
        ansible_connection: local
        ansible_python_interpreter: /usr/bin/python3
        mh_domain: app
        mh_multihost_keys:
          provisioned_topologies: [provisioned]
      children:
        client:
          hosts:
            client1: {}
        server:
          hosts:
            server1: {}
            server2: {}
""")

CONFTEST = textwrap.dedent("""\
    import pytest
    from pytest_mh import (MultihostBackupHost, MultihostConfig, MultihostDomain, MultihostHost, MultihostPlugin,
                           MultihostRole)

    pytest_plugins = ("pytest_mh",)

    def log(*what):
        with open("events.log", "a") as f:
            f.write(" ".join(str(w) for w in what) + "\\n")

    class ServerHost(MultihostBackupHost):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, auto_restore=False, **kwargs)
            self.count = 0

        def start(self):
            pass

        def stop(self):
            pass

        def backup(self):
            self.count += 1
            return f"{self.hostname}#{self.count}"

        def restore(self, backup_data):
            log("restore", backup_data)

        def remove_backup(self, backup_data):
            log("remove", backup_data)

    class Domain(MultihostDomain):
        @property
        def role_to_host_class(self):
            return {"server": ServerHost, "*": MultihostHost}

        @property
        def role_to_role_class(self):
            return {"*": MultihostRole}

    class Config(MultihostConfig):
        @property
        def provisioned_topologies(self):
            return self.confdict.get("provisioned_topologies", [])

        @property
        def id_to_domain_class(self):
            return {"*": Domain}

    def pytest_plugin_registered(plugin):
        if isinstance(plugin, MultihostPlugin):
            plugin.config_class = Config
""")


@pytest.fixture
def suite(project: pytest.Pytester) -> pytest.Pytester:
    project.makefile(".yml", hosts=INVENTORY)
    project.makeconftest(CONFTEST)
    return project


def _run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    return suite.runpytest_subprocess("-p", "pytest_mh_ansible.compat.plugin", "-i", "hosts.yml", "-rs", *args)


def _events(suite: pytest.Pytester) -> list[str]:
    return (suite.path / "events.log").read_text().splitlines()


def test_compat_controllers__hooks_get_the_hosts_they_name_and_init_runs_once(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_ctrl="""
        import pytest
        from pytest_mh import Topology, TopologyController, TopologyDomain, TopologyMark
        from conftest import log

        class Ctrl(TopologyController):
            def init(self, *args, **kwargs):
                super().init(*args, **kwargs)
                self.provisioned = self.name in self.multihost.provisioned_topologies
                log("init", self.name, self.provisioned, *[h.hostname for h in self.hosts],
                    *[h.hostname for h in self.ns.app.server])

            def set_artifacts(self, client):
                log("set_artifacts", client.hostname)

            def topology_setup(self, servers):
                log("topology_setup", *[s.hostname for s in servers])

            def skip(self, client):
                self.skips = getattr(self, "skips", 0) + 1
                return f"second test skipped on {client.hostname}" if self.skips == 2 else None

            def setup(self):
                log("setup")

            def teardown(self, **hosts):
                log("teardown", *sorted(hosts))

            def topology_teardown(self, client, servers):
                log("topology_teardown", client.hostname, len(servers))

        PROVISIONED = TopologyMark(
            "provisioned", Topology(TopologyDomain("app", client=1, server=2)), controller=Ctrl(),
            fixtures=dict(client="app.client[0]", servers="app.server"),
        )

        @pytest.mark.parametrize("n", [1, 2, 3])
        @pytest.mark.topology(PROVISIONED)
        def test_a(client, n):
            log("test", n)
        """
    )
    result = _run(suite)
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["*second test skipped on client1*"])
    assert _events(suite) == [
        "init provisioned True client1 server1 server2 server1 server2",
        "set_artifacts client1",
        "topology_setup server1 server2",
        "setup",
        "test 1",
        "teardown client servers",
        "setup",
        "test 3",
        "teardown client servers",
        "topology_teardown client1 2",
        "remove server1#1",  # the hosts' pytest_teardown at the end of the session
        "remove server2#1",
    ]


def test_compat_controllers__backup_controller_restores_each_test_and_vanilla_at_the_end(
    suite: pytest.Pytester,
) -> None:
    suite.makepyfile(
        test_backup="""
        import pytest
        from pytest_mh import BackupTopologyController, Topology, TopologyDomain, TopologyMark
        from conftest import log

        class Ctrl(BackupTopologyController):
            def topology_setup(self, server):
                log("topology_setup", server.hostname)
                super().topology_setup(server=server)

        SERVER = TopologyMark("server", Topology(TopologyDomain("app", server=1)), controller=Ctrl(),
                              fixtures=dict(server="app.server[0]"))

        @pytest.mark.topology(SERVER)
        def test_a(server):
            log("test_a")

        @pytest.mark.topology(SERVER)
        def test_b(server):
            log("test_b")
        """
    )
    _run(suite).assert_outcomes(passed=2)
    assert _events(suite) == [
        "topology_setup server1",
        "test_a",
        "restore server1#2",
        "test_b",
        "restore server1#2",
        "remove server1#2",
        "restore server1#1",  # the session's backup: restore_vanilla
        "remove server1#1",  # the host's pytest_teardown
    ]


def test_compat_controllers__restore_vanilla_on_error_at_class_definition(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_vanilla="""
        import pytest
        from pytest_mh import BackupTopologyController, Topology, TopologyDomain, TopologyMark
        from conftest import log

        class Ctrl(BackupTopologyController):
            @BackupTopologyController.restore_vanilla_on_error
            def topology_setup(self, server):
                log("topology_setup", server.hostname)
                raise RuntimeError("enrollment failed")

        BROKEN = TopologyMark("broken", Topology(TopologyDomain("app", server=1)), controller=Ctrl(),
                              fixtures=dict(server="app.server[0]"))

        @pytest.mark.topology(BROKEN)
        def test_a(server):
            log("test_a")
        """
    )
    result = _run(suite)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*enrollment failed*"])
    assert _events(suite)[:2] == ["topology_setup server1", "restore server1#1"]
    assert "test_a" not in _events(suite)


def test_compat_controllers__require_gets_parametrized_values_and_fixtures(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_req="""
        import pytest
        from pytest_mh import KnownTopologyBase, Topology, TopologyDomain, TopologyMark
        from conftest import log

        class KnownTopology(KnownTopologyBase):
            Client = TopologyMark("client", Topology(TopologyDomain("app", client=1)),
                                  fixtures=dict(client="app.client[0]"))

        @pytest.fixture
        def feature():
            return "on"

        @pytest.fixture
        def on_client(client):
            return client.host.hostname

        @pytest.mark.parametrize("user", ["root", "sssd"])
        @pytest.mark.require(
            lambda client, user, feature, mh: (user == "root" and feature == "on", f"{user} on {client.host.hostname}")
        )
        @pytest.mark.topology(KnownTopology.Client)
        def test_named(client, user, feature):
            log("named", user)

        @pytest.mark.require(lambda **every: {"client", "feature", "mh", "request"} <= set(every) - {"on_client"})
        @pytest.mark.topology(KnownTopology.Client)
        def test_every(client, feature, on_client, request):
            log("every")

        @pytest.mark.require(lambda on_client: True)
        @pytest.mark.topology(KnownTopology.Client)
        def test_needs_mh(client, on_client):
            log("needs_mh")
        """
    )
    result = _run(suite)
    result.assert_outcomes(passed=2, skipped=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_needs_mh*condition asks for on_client, which the test does not have before mh is set up*",
            "*sssd on client1*",
        ]
    )
    assert sorted(_events(suite)) == ["every", "named root"]


def test_compat_controllers__pytest_mh_markers_collect_with_strict_markers(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_strict="""
        import pytest
        from pytest_mh import Topology, TopologyDomain, TopologyMark

        ONE = TopologyMark("one", Topology(TopologyDomain("app", client=1)), fixtures=dict(client="app.client[0]"))
        TWO = TopologyMark("two", Topology(TopologyDomain("app", client=1, server=1)),
                           fixtures=dict(client="app.client[0]"))

        @pytest.mark.preferred_topology("two")
        @pytest.mark.require(lambda client: True, "never")
        @pytest.mark.topology([ONE, TWO])
        def test_a(client):
            pass
        """
    )
    result = _run(suite, "--strict-markers", "-v")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["*test_a*two*PASSED*"])
