"""A pytest-mh suite switches by its requirements alone: no ``-p``, its host file and its command line as they are.

Here no real pytest-mh is installed (the test virtualenv has none): ``pytest_plugins = ("pytest_mh",)``
gets the layer without ``-p``, and pytest-mh's options work. Every suite has ``filterwarnings = error``,
as many real suites do: a warning of this project would fail them. The runs with a real pytest-mh
installed beside are in ``tests/integration/install/test_pytest_mh_switch.py``.
"""

from __future__ import annotations

import os
import textwrap

import pytest

from pytest_mh_ansible._private.pytest_mh_cli import PYTEST_MH_OPTIONS

STRICT_INI = "[pytest]\naddopts = -p no:cacheprovider --strict-markers\nfilterwarnings =\n    error\n"

CONFTEST = textwrap.dedent("""\
    import sys

    from pytest_mh import MultihostConfig, MultihostDomain, MultihostHost, MultihostPlugin, MultihostRole

    pytest_plugins = ("pytest_mh",)

    class Domain(MultihostDomain):
        @property
        def role_to_host_class(self):
            return {"*": MultihostHost}

        @property
        def role_to_role_class(self):
            return {"*": MultihostRole}

    class Config(MultihostConfig):
        @property
        def id_to_domain_class(self):
            return {"*": Domain}

    def pytest_plugin_registered(plugin):
        if isinstance(plugin, MultihostPlugin):
            plugin.config_class = Config

    def pytest_sessionfinish(session):
        manager = session.config.pluginmanager
        print("LAYER", manager.has_plugin("pytest_mh_ansible.compat.plugin"), sys.modules["pytest_mh"].__name__)
""")

TESTS = textwrap.dedent("""\
    import pytest
    from pytest_mh import KnownTopologyBase, Topology, TopologyDomain, TopologyMark

    class KnownTopology(KnownTopologyBase):
        Client = TopologyMark("client", Topology(TopologyDomain("app", client=1)),
                              fixtures=dict(client="app.client[0]"))
        Pair = TopologyMark("pair", Topology(TopologyDomain("app", client=1, server=1)),
                            fixtures=dict(client="app.client[0]", server="app.server[0]"))

    @pytest.mark.topology(KnownTopology.Client)
    def test_echo(client):
        assert client.host.conn.run("echo $((6 * 7))").stdout == "42"

    @pytest.mark.topology([KnownTopology.Client, KnownTopology.Pair])
    @pytest.mark.preferred_topology(KnownTopology.Pair)
    def test_preferred(client, mh):
        print("RAN", mh.topology_name)

    def test_plain():
        pass
""")


@pytest.fixture
def suite(project: pytest.Pytester) -> pytest.Pytester:
    """A pytest-mh suite (its conftest and tests as they are) on local-connection hosts, warnings as errors."""
    project.makeini(STRICT_INI)
    project.makeconftest(CONFTEST)
    project.makepyfile(test_suite=TESTS)
    return project


def test_switch__pytest_mh_suite_gets_the_layer_without_p(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("-i", "hosts.ini", "-s")
    result.assert_outcomes(passed=3, deselected=1)
    result.stdout.fnmatch_lines(["*LAYER True pytest_mh_ansible.compat*"])
    assert "installed too" not in result.stdout.str()
    assert "Warning" not in result.stdout.str() + result.stderr.str()


def test_switch__layer_asked_for_with_p_gives_the_same_run(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("-p", "pytest_mh_ansible.compat.plugin", "-i", "hosts.ini", "-s")
    result.assert_outcomes(passed=3, deselected=1)
    result.stdout.fnmatch_lines(["*LAYER True pytest_mh_ansible.compat*"])
    assert "installed too" not in result.stdout.str()


def test_switch__plain_suite_does_not_load_the_layer(project: pytest.Pytester) -> None:
    project.makeini(STRICT_INI)
    project.makeconftest(
        textwrap.dedent("""\
        import sys

        def pytest_sessionfinish(session):
            manager = session.config.pluginmanager
            print("LAYER", manager.has_plugin("pytest_mh_ansible.compat.plugin"), "pytest_mh" in sys.modules)
        """)
    )
    project.makepyfile(
        test_plain=textwrap.dedent("""\
        import pytest
        from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

        @pytest.mark.topology(TopologyMark("one", Topology(TopologyDomain("app", client=1)),
                                           fixtures=dict(client="app.client[0]")))
        def test_one(client):
            assert client.host.conn.run("echo ok").stdout.strip() == "ok"
        """)
    )
    result = project.runpytest_subprocess("-i", "hosts.ini", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*LAYER False False*"])


def test_switch__preferred_topology_as_in_pytest_mh(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("-i", "hosts.ini", "-s", "-k", "preferred")
    result.assert_outcomes(passed=1, deselected=3)
    result.stdout.fnmatch_lines(["*RAN pair*"])
    result = suite.runpytest_subprocess("-i", "hosts.ini", "-s", "-k", "preferred", "--mh-ignore-preferred-topology")
    result.assert_outcomes(passed=2, deselected=2)
    result = suite.runpytest_subprocess("-i", "hosts.ini", "-s", "--mh-topology", "client")
    result.assert_outcomes(passed=2, deselected=2)  # a topology asked for by name runs, preferred or not
    result.stdout.fnmatch_lines(["*RAN client*"])


def test_switch__preferred_topology_with_two_arguments_is_one_line(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_bad=textwrap.dedent("""\
        import pytest
        from pytest_mh import Topology, TopologyDomain, TopologyMark

        ONE = TopologyMark("one", Topology(TopologyDomain("app", client=1)))

        @pytest.mark.topology(ONE)
        @pytest.mark.preferred_topology("one", "two")
        def test_bad(mh):
            pass
        """)
    )
    result = suite.runpytest_subprocess("-i", "hosts.ini", "test_bad.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: test_bad.py::test_bad[[]one[]]: @pytest.mark.preferred_topology takes one*"])


def test_switch__every_pytest_mh_option_is_accepted(suite: pytest.Pytester) -> None:
    help_text = suite.runpytest_subprocess("--help").stdout.str()
    assert {name for name in PYTEST_MH_OPTIONS if f"{name}" not in help_text} == set()
    result = suite.runpytest_subprocess(
        "-i", "hosts.ini", "--mh-lazy-ssh", "--mh-collect-logs", "never", "--mh-ignore-preferred-topology",
        "--mh-collect-artifacts", "on-failure", "--mh-artifacts-dir", "out", "--mh-compress-artifacts",
        "--mh-log-path", "mh.log", "--mh-not-topology", "nothing", "--mh-exact-topology",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert (suite.path / "mh.log").is_file()


def test_switch__collect_logs_apart_from_artifacts(suite: pytest.Pytester) -> None:
    suite.runpytest_subprocess(
        "-i", "hosts.ini", "-k", "echo", "--mh-collect-artifacts=never", "--mh-collect-logs=always"
    )
    assert [p.name for p in (suite.path / "artifacts").rglob("test.log")] == ["test.log"]
    for directory, logs in (("b", ["--mh-collect-logs=never"]), ("c", [])):  # without it, logs follow the artifacts
        suite.runpytest_subprocess(
            "-i", "hosts.ini", "-k", "echo", f"--mh-artifacts-dir={directory}", "--mh-collect-artifacts=always", *logs
        )
    assert list((suite.path / "b").rglob("test.log")) == []
    assert len(list((suite.path / "c").rglob("test.log"))) == 1


def test_switch__wrong_value_is_one_line_naming_option_and_value(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("-i", "hosts.ini", "--mh-collect-logs=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*argument --mh-collect-logs: invalid choice: 'sometimes'*"])
    result = suite.runpytest_subprocess("--mh-config=missing.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --mh-config missing.yaml: missing.yaml: cannot be read: *"])
    (suite.path / "bad.yaml").write_text(
        "domains:\n- id: app\n  hosts:\n  - {hostname: c1, role: client, os: {family: beos}}\n"
    )
    result = suite.runpytest_subprocess("--mh-config=bad.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "ERROR: --mh-config bad.yaml: bad.yaml: domains[0].hosts[0] (c1).os.family: 'beos' is not"
        in result.stderr.str()
    )


MHC = textwrap.dedent("""\
    provisioned_topologies: [pair]
    config: {suite: demo}
    domains:
    - id: app
      hosts:
      - hostname: client1
        role: client
        conn: {type: ssh, host: 192.0.2.10, username: tester, private_key: /keys/id}
        artifacts: {pytest_setup: [/var/log/setup.log], test: [/var/log/app.log]}
        rack: 7
      - hostname: server1
        role: server
        conn: {type: ssh, host: 192.0.2.11, private_key_password: x, private_key: /keys/id}
""")


def test_switch__mh_config_is_read_as_the_inventory(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    (suite.path / "mhc.yaml").write_text(MHC)
    tmp = suite.path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))  # where the converted inventory lives during the run
    suite.makeconftest(
        CONFTEST
        + textwrap.dedent("""\

        def pytest_collection_finish(session):
            from pytest_mh_ansible._private.stash import SESSION_KEY
            inventory = session.config.stash[SESSION_KEY].inventory
            for name in ("client1", "server1"):
                v = inventory.host(name).variables
                print("VARS", name, v["ansible_host"], v.get("ansible_user"), v.get("mh_artifacts"),
                      v.get("mh_host_keys"), v["mh_multihost_keys"], v["mh_multihost_config"])
        """)
    )
    result = suite.runpytest_subprocess("--mh-config=mhc.yaml", "--mh-lazy-ssh", "--collect-only", "-q", "-s")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    out = result.stdout.str()
    assert (
        "VARS client1 192.0.2.10 tester {'pytest_setup': ['/var/log/setup.log'], 'test': ['/var/log/app.log']} "
        "{'rack': 7} {'provisioned_topologies': ['pair']} {'suite': 'demo'}"
    ) in out
    assert "VARS server1 192.0.2.11 root None None" in out
    # no warning (filterwarnings = error), the conversion's remarks in the header instead
    header = suite.runpytest_subprocess("--mh-config=mhc.yaml", "--mh-show-hosts").stdout.str()
    assert "mh-ansible inventory: mhc.yaml (2 hosts)" in header
    assert "mh-ansible --mh-config: mhc.yaml: domains[0].hosts[1] (server1).conn: 'private_key_password'" in header
    assert [p for p in tmp.iterdir() if p.name.startswith("mh-ansible-mhc-")] == [], "the inventory outlived the run"
    assert os.path.exists(suite.path / "mhc.yaml")


def test_switch__mh_config_needs_no_ini_and_combines_with_i(suite: pytest.Pytester) -> None:
    (suite.path / "mhc.yaml").write_text(MHC.replace("client1", "client9").replace("server1", "server9"))
    result = suite.runpytest_subprocess("--mh-config=mhc.yaml", "-i", "hosts.ini", "--mh-show-hosts")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["mh-ansible inventory: hosts.ini, mhc.yaml (5 hosts)"])
