"""pytest-mh's ``mh`` object, fixtures, logger and plugin object through the layer, as a suite sees them (pytester)."""

from __future__ import annotations

import textwrap

import pytest

LOCAL = "ansible_connection=local ansible_python_interpreter=/usr/bin/python3"

HOSTS = textwrap.dedent(f"""\
    [client]
    client1 ansible_host=192.0.2.10 {LOCAL}

    [all:vars]
    mh_domain=app
""")

CONFTEST = textwrap.dedent("""\
    import pytest
    from pytest_mh import (MultihostConfig, MultihostDomain, MultihostHost, MultihostPlugin, MultihostRole,
                           MultihostUtility)

    pytest_plugins = ("pytest_mh",)

    class Verdict(MultihostUtility):
        def pytest_report_teststatus(self, report, config):
            if "custom" in report.nodeid and report.failed:
                return "known", "K", "KNOWN ISSUE"
            return None

    class Client(MultihostRole):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.verdict = Verdict(self.host)
            self.made_with = (self.mh.request.node.name, self.mh.multihost is not None)

    class Domain(MultihostDomain):
        @property
        def role_to_host_class(self):
            return {"*": MultihostHost}

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

    def pytest_sessionfinish(session):
        plugin = session.config.pluginmanager.get_plugin("MultihostPlugin")
        print("PLUGIN", type(plugin).__name__, plugin.mh_collect_artifacts, plugin.mh_compress_artifacts,
              plugin.pytest_session is session, [h.hostname for h in plugin.required_hosts],
              "app" in plugin.topology)
""")

TESTS = textwrap.dedent("""\
    from pathlib import Path

    import pytest
    from pytest_mh import (MultihostConfig, MultihostFixture, MultihostItemData, MultihostLogger, Topology,
                           TopologyDomain, TopologyMark, mh, mh_config, mh_logger, mh_topology, mh_topology_mark,
                           mh_topology_name, pytest_addoption, pytest_configure)

    CLIENT = TopologyMark("client", Topology(TopologyDomain("app", client=1)), fixtures=dict(client="app.client[0]"))

    @pytest.mark.topology(CLIENT)
    def test_members(mh, client, mh_config, mh_logger, mh_topology, mh_topology_mark, mh_topology_name):
        assert isinstance(mh, MultihostFixture)
        assert client.made_with == ("test_members[client]", True)
        assert mh.request.node.name == "test_members[client]"
        assert mh.data is MultihostItemData.GetData(mh.request.node)
        assert mh.data.topology_mark is mh.topology_mark is mh_topology_mark
        assert mh_topology is mh.topology and mh_topology_name == "client"
        assert isinstance(mh_config, MultihostConfig) and mh.multihost is mh_config
        assert isinstance(mh_logger, MultihostLogger) and mh.logger is mh_logger is mh_config.logger
        assert mh.topology_controller is mh.topology_mark.controller
        assert mh._lookup("app.client[0]") is client
        assert mh._lookup("app.client") == [client]
        with pytest.raises(LookupError):
            mh._lookup("app.server")
        assert (client.host.hostname, client.host.conn.host) == ("client1", "192.0.2.10")
        assert client.logger is client.host.logger
        assert mh_config.artifacts_dir == Path.cwd() / "art"
        assert (mh_config.artifacts_mode, mh_config.artifacts_compression, mh_config.lazy_ssh) == (
            "always", True, True
        )
        mh_logger.info("inside", extra={"data": {"Answer": 42}})
        mh.log_phase("MIDDLE")
        mh.split_log_file("middle.log")

    @pytest.mark.topology(CLIENT)
    def test_custom_status(client):
        assert False, "a known issue"
""")


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".ini", hosts=HOSTS)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_suite=TESTS)
    return pytester


def test_compat_mh__members_fixtures_logger_and_plugin_as_in_pytest_mh(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess(
        "-p",
        "pytest_mh_ansible.compat.plugin",
        "-i",
        "hosts.ini",
        "-v",
        "-s",
        "--mh-artifacts-dir",
        "art",
        "--mh-collect-artifacts",
        "always",
        "--mh-compress-artifacts",
        "--mh-lazy-ssh",
    )
    result.stdout.fnmatch_lines(["*test_members?client? PASSED*", "*test_custom_status?client? KNOWN ISSUE*"])
    result.stdout.fnmatch_lines(["*PLUGIN MultihostPlugin always True True ?'client1'? True"])
    result.stdout.fnmatch_lines(["*1 passed, 1 known*"])  # the utility's own word for the failed test
    split = suite.path / "art" / "tests" / "test_suite" / "test_members[client]" / "middle.log"
    text = split.read_text()
    assert "MIDDLE :: test_suite.py::test_members[client]" in text
    assert "inside" in text
    assert "Answer: 42" in text


def test_compat_mh__a_host_in_several_groups_gets_the_role_class_of_the_slot_it_fills(
    suite: pytest.Pytester,
) -> None:
    suite.makefile(
        ".ini",
        hosts=textwrap.dedent(f"""\
            [extra]
            client1 {LOCAL}

            [client]
            client1

            [all:vars]
            mh_domain=app
        """),
    )
    suite.makepyfile(
        test_suite=textwrap.dedent("""\
            import pytest
            from pytest_mh import Topology, TopologyDomain, TopologyMark

            CLIENT = TopologyMark("client", Topology(TopologyDomain("app", client=1)),
                                  fixtures=dict(client="app.client[0]"))

            @pytest.mark.topology(CLIENT)
            def test_role(client):
                assert (type(client).__name__, client.role, client.host.role) == ("Client", "client", "extra")
        """)
    )
    result = suite.runpytest_subprocess("-p", "pytest_mh_ansible.compat.plugin", "-i", "hosts.ini")
    result.assert_outcomes(passed=1)
