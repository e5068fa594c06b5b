"""The pytest-mh compatibility plugin as a suite sees it (pytester; hosts on Ansible's local connection)."""

from __future__ import annotations

import textwrap

import pytest

CONFTEST = textwrap.dedent("""\
    import pytest
    from pytest_mh import (MultihostConfig, MultihostDomain, MultihostHost, MultihostItemData, MultihostPlugin,
                           MultihostRole)

    pytest_plugins = ("pytest_mh",)
    SEEN = []

    class ClientHost(MultihostHost):
        def pytest_setup(self):
            self.answer = self.conn.run("echo $((6 * 7))").stdout

    class Client(MultihostRole):
        pass

    class Domain(MultihostDomain):
        @property
        def role_to_host_class(self):
            return {"client": ClientHost, "*": MultihostHost}

        @property
        def role_to_role_class(self):
            return {"client": Client, "*": MultihostRole}

    class Config(MultihostConfig):
        @property
        def id_to_domain_class(self):
            return {"*": Domain}

    def pytest_plugin_registered(plugin):
        if isinstance(plugin, MultihostPlugin):
            plugin.config_class = Config

    def pytest_runtest_setup(item):
        data = MultihostItemData.GetData(item)
        SEEN.append((item.name, data.topology_mark.name if data.topology_mark else None))

    def pytest_sessionfinish(session):
        print("SEEN", sorted(SEEN))
""")

TESTS = textwrap.dedent("""\
    import pytest
    from pytest_mh import KnownTopologyBase, Topology, TopologyDomain, TopologyMark
    from pytest_mh.conn import ProcessError

    class KnownTopology(KnownTopologyBase):
        Client = TopologyMark("client", Topology(TopologyDomain("app", client=1)),
                              fixtures=dict(client="app.client[0]"))

    @pytest.mark.topology(KnownTopology.Client)
    def test_classes(client, mh_config):
        assert type(client).__name__ == "Client"
        assert type(client.host).__name__ == "ClientHost"
        assert client.host.answer == "42"
        assert client.host.mh_domain in mh_config.domains
        assert [d.id for d in mh_config.domains] == ["app"]

    @pytest.mark.topology(KnownTopology.Client)
    def test_error(client):
        with pytest.raises(ProcessError) as info:
            client.host.conn.exec(["sh", "-c", "exit 7"])
        assert info.value.rc == 7

    def test_plain():
        pass
""")


@pytest.fixture
def suite(project: pytest.Pytester) -> pytest.Pytester:
    project.makeconftest(CONFTEST)
    project.makepyfile(test_suite=TESTS)
    return project


def test_compat_plugin__suite_runs_with_the_plugin(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("-p", "pytest_mh_ansible.compat.plugin", "-i", "hosts.ini", "-s")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*SEEN [[]('test_classes[[]client[]]', 'client'), ('test_error[[]client[]]', 'client'), "
            "('test_plain', None)[]]*"
        ]
    )


def test_compat_plugin__the_same_without_p_where_no_real_pytest_mh(suite: pytest.Pytester) -> None:
    # pytest_plugins = ("pytest_mh",) brings the layer by itself (tests/functional/test_compat_switch.py)
    result = suite.runpytest_subprocess("-i", "hosts.ini")
    result.assert_outcomes(passed=3)
