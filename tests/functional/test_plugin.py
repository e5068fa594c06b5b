"""The plugin as a user sees it: markers, node ids, selection, skips, fixtures, life cycle, errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

PAIR = """
import pytest
from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

PAIR = TopologyMark("pair", Topology(TopologyDomain("app", client=1, server=1)),
                    fixtures=dict(client="app.client[0]", server="app.server[0]"))
TRIO = TopologyMark("trio", Topology(TopologyDomain("app", client=1, server=2)),
                    fixtures=dict(client="app.client[0]", servers="app.server"))
"""


def test_plugin__node_ids_carry_the_topology_and_combine_with_parametrize(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_ids=PAIR
        + textwrap.dedent("""
        @pytest.mark.topology([PAIR, TRIO])
        def test_a(client):
            pass

        @pytest.mark.topology(PAIR)
        @pytest.mark.parametrize("value", [1, 2])
        def test_b(client, value):
            pass
    """)
    )
    result = project.runpytest_subprocess("-i", "hosts.ini", "--collect-only", "-q")
    ids = [line for line in result.stdout.lines if line.startswith("test_ids.py::")]
    # Grouped by topology, so that each topology is set up once.
    assert ids == [
        "test_ids.py::test_a[pair]",
        "test_ids.py::test_b[pair-1]",
        "test_ids.py::test_b[pair-2]",
        "test_ids.py::test_a[trio]",
    ]


def test_plugin__selects_exactly_one_topology_by_node_id(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_sel=PAIR
        + textwrap.dedent("""
        @pytest.mark.topology([PAIR, TRIO])
        def test_a(mh):
            print("RAN", mh.topology_name)
    """)
    )
    result = project.runpytest_subprocess("-i", "hosts.ini", "-s", "test_sel.py::test_a[trio]")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*RAN trio*"])
    assert "RAN pair" not in result.stdout.str()
    result = project.runpytest_subprocess("-i", "hosts.ini", "-k", "pair")
    result.assert_outcomes(passed=1)


def test_plugin__last_failed_reruns_the_failed_topology_only(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\n")
    project.makepyfile(
        test_lf=PAIR
        + textwrap.dedent("""
        @pytest.mark.topology([PAIR, TRIO])
        def test_a(mh):
            assert mh.topology_name == "pair"
    """)
    )
    project.runpytest_subprocess("-i", "hosts.ini").assert_outcomes(passed=1, failed=1)
    result = project.runpytest_subprocess("-i", "hosts.ini", "--lf", "-v")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_a[[]trio[]] FAILED*"])


def test_plugin__unsatisfiable_topology_is_skipped_with_the_reason(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_skip=PAIR
        + textwrap.dedent("""
        LDAP = TopologyMark("ldap", Topology(TopologyDomain("app", client=1, ldap=1)),
                            fixtures=dict(ldap="app.ldap[0]"))

        @pytest.mark.topology([PAIR, LDAP])
        def test_a(mh):
            pass
    """)
    )
    result = project.runpytest_subprocess("-i", "hosts.ini", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*topology 'ldap' needs 1 host with role 'ldap' in domain 'app'; "
            "the inventory has none (groups: client, server)"
        ]
    )


def test_plugin__without_inventory_topology_tests_skip_and_others_run(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_inert=PAIR
        + textwrap.dedent("""
        @pytest.mark.topology(PAIR)
        def test_a(client):
            pass

        def test_plain():
            pass
    """)
    )
    result = project.runpytest_subprocess("-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*no Ansible inventory given*"])


def test_plugin__role_fixtures_are_usable_from_ordinary_fixtures(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_fix=PAIR
        + textwrap.dedent("""
        @pytest.fixture
        def server_name(server):
            return server.host.name

        @pytest.fixture
        def first_server(servers):
            return servers[0]

        @pytest.mark.topology(TRIO)
        def test_a(first_server, client, servers, mh):
            assert first_server is servers[0]
            assert [s.host.name for s in servers] == ["server1", "server2"]
            assert client.host.name == "client1"
            assert mh.ns.app.server == servers
            assert client.role == "client"

        @pytest.mark.topology(PAIR)
        def test_b(server_name):
            assert server_name == "server1"

        @pytest.mark.topology(TRIO)
        def test_c(server_name):
            pass
    """)
    )
    result = project.runpytest_subprocess("-i", "hosts.ini")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*topology 'trio' has no fixture 'server' (it has: client, servers)*"])


def test_plugin__shorthand_topology(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nmh_default_domain = app\n")
    project.makepyfile(
        test_short="""
        import pytest

        @pytest.mark.topology(client=1, server=2)
        def test_a(client, server, mh_topology_name):
            assert client.host.name == "client1"
            assert [s.host.name for s in server] == ["server1", "server2"]
            assert mh_topology_name == "client1-server2"
    """
    )
    result = project.runpytest_subprocess("-i", "hosts.ini", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_a[[]client1-server2[]] PASSED*"])


LIFECYCLE = """
import pytest
from pytest_mh_ansible import (MultihostHost, MultihostRole, MultihostUtility, Topology, TopologyController,
                               TopologyDomain, TopologyMark)

LOG = []

def log(*what):
    with open("events.log", "a") as f:
        f.write(" ".join(what) + "\\n")

class Host(MultihostHost):
    def pytest_setup(self): log("pytest_setup", self.name)
    def pytest_teardown(self): log("pytest_teardown", self.name)
    def setup(self): log("host.setup", self.name)
    def teardown(self): log("host.teardown", self.name)

class Util(MultihostUtility):
    def setup(self): log("util.setup", self.host.name)
    def teardown(self): log("util.teardown", self.host.name)

class Role(MultihostRole):
    def __init__(self, mh, role, host):
        super().__init__(mh, role, host)
        self.util = Util(host)
    def setup(self): log("role.setup", self.host.name)
    def teardown(self): log("role.teardown", self.host.name)

class Ctrl(TopologyController):
    def topology_setup(self, **hosts): log("topology_setup", self.name, *sorted(hosts))
    def topology_teardown(self, **hosts): log("topology_teardown", self.name)
    def setup(self, **hosts): log("ctrl.setup", self.name)
    def teardown(self, **hosts): log("ctrl.teardown", self.name)

def pytest_mh_register(registry):
    registry.role("client", Role, host=Host)
    registry.role("server", Role, host=Host)

ONE = TopologyMark("one", Topology(TopologyDomain("app", client=1)), controller=Ctrl(),
                   fixtures=dict(client="app.client[0]"))
TWO = TopologyMark("two", Topology(TopologyDomain("app", client=1, server=1)), controller=Ctrl(),
                   fixtures=dict(client="app.client[0]", server="app.server[0]"))
"""


def test_plugin__life_cycle_order(project: pytest.Pytester) -> None:
    project.makeconftest(LIFECYCLE)
    project.makepyfile(
        test_life="""
        import pytest
        from conftest import ONE, TWO, log

        @pytest.mark.topology([ONE, TWO])
        def test_a(client):
            log("test_a", client.host.name)

        @pytest.mark.topology(ONE)
        def test_b(client):
            log("test_b", client.host.name)
    """
    )
    project.runpytest_subprocess("-i", "hosts.ini").assert_outcomes(passed=3)
    events = (project.path / "events.log").read_text().splitlines()
    per_test = ["host.setup client1", "ctrl.setup one", "util.setup client1", "role.setup client1"]
    per_test_end = ["role.teardown client1", "util.teardown client1", "ctrl.teardown one", "host.teardown client1"]
    assert events == [
        "pytest_setup client1",
        "topology_setup one client",
        *per_test,
        "test_a client1",
        *per_test_end,
        *per_test,
        "test_b client1",
        *per_test_end,
        "topology_teardown one",
        "pytest_setup server1",
        "topology_setup two client server",
        "host.setup client1",
        "host.setup server1",
        "ctrl.setup two",
        "util.setup client1",
        "role.setup client1",
        "util.setup server1",
        "role.setup server1",
        "test_a client1",
        "role.teardown server1",
        "util.teardown server1",
        "role.teardown client1",
        "util.teardown client1",
        "ctrl.teardown two",
        "host.teardown server1",
        "host.teardown client1",
        "topology_teardown two",
        "pytest_teardown client1",
        "pytest_teardown server1",
    ]


def test_plugin__teardown_runs_every_step_and_raises_one_group(project: pytest.Pytester) -> None:
    project.makeconftest(
        LIFECYCLE
        + textwrap.dedent("""
        class BadUtil(Util):
            def teardown(self):
                log("bad-util.teardown")
                raise RuntimeError("util broke")

        class BadRole(Role):
            def __init__(self, mh, role, host):
                super().__init__(mh, role, host)
                self.bad = BadUtil(host)
            def teardown(self):
                log("bad-role.teardown")
                raise ValueError("role broke")

        def pytest_mh_register(registry):
            registry.role("client", BadRole, host=Host)
    """)
    )
    project.makepyfile(
        test_td="""
        import pytest
        from conftest import ONE

        @pytest.mark.topology(ONE)
        def test_a(client):
            pass
    """
    )
    result = project.runpytest_subprocess("-i", "hosts.ini")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*TeardownExceptionGroup: teardown of test_td.py::test_a[[]one[]]: 2 step(s) failed*",
        ]
    )
    out = result.stdout.str()
    assert "role 'client' on host 'client1': ValueError: role broke" in out
    assert "utility BadUtil on host 'client1': RuntimeError: util broke" in out
    events = (project.path / "events.log").read_text().splitlines()
    assert "util.teardown client1" in events  # the step after the failing ones still ran
    assert "host.teardown client1" in events
    assert "topology_teardown one" in events


def test_plugin__topology_setup_failure_errors_its_tests_and_others_run(project: pytest.Pytester) -> None:
    project.makeconftest(
        LIFECYCLE
        + textwrap.dedent("""
        class Broken(Ctrl):
            def topology_setup(self, **hosts):
                log("broken.topology_setup")
                raise RuntimeError("cannot enroll")

        BROKEN = TopologyMark("broken", Topology(TopologyDomain("app", client=1)), controller=Broken(),
                              fixtures=dict(client="app.client[0]"))
    """)
    )
    project.makepyfile(
        test_fail="""
        import pytest
        from conftest import BROKEN, ONE

        @pytest.mark.topology([BROKEN, ONE])
        def test_a(client):
            pass

        @pytest.mark.topology(BROKEN)
        def test_b(client):
            pass
    """
    )
    result = project.runpytest_subprocess("-i", "hosts.ini")
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(["*topology 'broken' could not be set up: RuntimeError: cannot enroll*"])
    events = (project.path / "events.log").read_text().splitlines()
    assert events.count("broken.topology_setup") == 1  # set up once, failure reported to each test


def test_plugin__topology_filters(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_filter=PAIR
        + textwrap.dedent("""
        @pytest.mark.topology([PAIR, TRIO])
        def test_a(mh):
            pass

        def test_plain():
            pass
    """)
    )
    project.runpytest_subprocess("-i", "hosts.ini", "--mh-topology", "pair").assert_outcomes(passed=1, deselected=2)
    project.runpytest_subprocess("-i", "hosts.ini", "--mh-not-topology", "pair").assert_outcomes(passed=2, deselected=1)
    # trio uses all three hosts of the inventory; pair does not.
    result = project.runpytest_subprocess("-i", "hosts.ini", "--mh-exact-topology", "-v")
    result.assert_outcomes(passed=2, deselected=1)
    result.stdout.fnmatch_lines(["*test_a[[]trio[]] PASSED*"])


def test_plugin__require_marker(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_req=PAIR
        + textwrap.dedent("""
        @pytest.mark.topology(TRIO)
        @pytest.mark.require(lambda servers: len(servers) > 5, "needs many servers")
        def test_a(mh):
            pass

        @pytest.mark.topology(TRIO)
        @pytest.mark.require(lambda client: (client.host.name == "client1", "not client1"))
        def test_b(mh):
            pass
    """)
    )
    result = project.runpytest_subprocess("-i", "hosts.ini", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*needs many servers*"])


def test_plugin__require_marker_passes_kwargs_and_leaves_defaults_alone(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_req=PAIR
        + textwrap.dedent("""
        import functools

        def named(client, wanted="client1", **rest):
            return client.host.name == wanted

        def many(minimum, servers=None):
            return servers is not None and len(servers) >= minimum

        @pytest.mark.topology(TRIO)
        @pytest.mark.require(lambda **fixtures: {"client", "mh", "servers"} <= set(fixtures), "kwargs")
        def test_kwargs(mh):
            pass

        @pytest.mark.topology(TRIO)
        @pytest.mark.require(named, "default kept")
        def test_default(mh):
            pass

        @pytest.mark.topology(TRIO)
        @pytest.mark.require(functools.partial(many, 3), "partial: needs 3 servers")
        def test_partial(mh):
            pass

        @pytest.mark.topology(TRIO)
        @pytest.mark.require(lambda nothere: True, "missing")
        def test_missing(mh):
            pass
    """)
    )
    result = project.runpytest_subprocess("-i", "hosts.ini", "-rs")
    result.assert_outcomes(passed=2, skipped=1, errors=1)
    result.stdout.fnmatch_lines(["*condition asks for nothere*", "*partial: needs 3 servers*"])


def test_plugin__bad_inventory_path_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makepyfile(test_x="def test_x(): pass")
    result = project.runpytest_subprocess("-i", "missing/hosts.ini")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*pytest-mh-ansible: *missing/hosts.ini*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_plugin__bad_marker_is_a_collection_error_naming_the_test(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.topology("just-a-name", "and-junk", "more")
        def test_x(mh):
            pass

        def test_ok():
            pass
    """
    )
    result = project.runpytest_subprocess("-i", "hosts.ini")
    result.stdout.fnmatch_lines(["*test_bad.py::test_x: invalid arguments for @pytest.mark.topology*"])
    assert "INTERNALERROR" not in result.stdout.str()


def test_plugin__registering_a_non_role_class_names_the_value(project: pytest.Pytester) -> None:
    project.makeconftest("""
        def pytest_mh_register(registry):
            registry.role("client", dict)
    """)
    project.makepyfile(
        test_reg=PAIR
        + textwrap.dedent("""
        @pytest.mark.topology(PAIR)
        def test_a(client):
            pass
    """)
    )
    result = project.runpytest_subprocess("-i", "hosts.ini")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*role 'client': <class 'dict'> is not a subclass of MultihostRole*"])


def test_plugin__help_lists_the_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    result.stdout.re_match_lines(
        [
            # Python 3.13's argparse names the metavar once for an option with a short and a long form.
            r".*(-i INVENTORY, --mh-inventory=INVENTORY|-i, --mh-inventory INVENTORY)",
            r".*--mh-vault-password-file=FILE",
            r".*--mh-limit=PATTERN",
            r".*--mh-topology=NAME",
            r".*--mh-lab=SPEC",
        ]
    )


def test_plugin__loads_from_the_entry_point_in_a_subprocess(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_ep=PAIR
        + textwrap.dedent("""
        @pytest.mark.topology(PAIR)
        def test_a(client, server):
            assert client.host.conn.run("echo hi").stdout == "hi\\n"
    """)
    )
    result = project.runpytest_subprocess("-i", "hosts.ini", "-p", "xdist", "-n", "2")
    result.assert_outcomes(passed=1)


def test_plugin__unreachable_host_errors_its_tests_and_others_run(pytester: pytest.Pytester) -> None:
    # Port 9 on loopback has no listener: the ssh connection is refused at once.
    pytester.makefile(
        ".ini",
        hosts=textwrap.dedent("""\
            [client]
            client1 ansible_connection=local ansible_python_interpreter=/usr/bin/python3

            [server]
            server1 ansible_host=127.0.0.1 ansible_port=9 ansible_user=root ansible_password=Sup3rS3cret!

            [all:vars]
            mh_domain=app
        """),
    )
    pytester.makepyfile(
        test_unreach=PAIR
        + textwrap.dedent("""
        ONE = TopologyMark("one", Topology(TopologyDomain("app", client=1)), fixtures=dict(client="app.client[0]"))

        @pytest.mark.topology([PAIR, ONE])
        def test_a(client):
            pass

        @pytest.mark.topology(PAIR)
        def test_b(server):
            pass
    """)
    )
    result = pytester.runpytest_subprocess("-i", "hosts.ini", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(["*host 'server1' is unreachable: *"])
    assert "Sup3rS3cret!" not in result.stdout.str() + result.stderr.str()
    result = pytester.runpytest_subprocess("-i", "hosts.ini", "-p", "no:cacheprovider", "--mh-unreachable=skip", "-rs")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["*SKIPPED*host 'server1' is unreachable*"])


def test_plugin__limit_role_groups_and_mh_variables(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".ini",
        hosts=textwrap.dedent("""\
            [client]
            client1 ansible_connection=local mh_os_family=Linux mh_config="{'release': 9}"

            [ldap_servers]
            ldap1 ansible_connection=local mh_artifacts="['/var/log/slapd.log']"

            [misc]
            kdc1 ansible_connection=local mh_role=kdc mh_domain=realm
        """),
    )
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\nmh_role_groups =\n    ldap = ldap_servers\n")
    pytester.makepyfile(
        test_map="""
        import pytest

        @pytest.mark.topology(client=1, ldap=1)
        def test_roles(client, ldap, mh):
            assert ldap.host.name == "ldap1"
            assert "ldap" in ldap.host.roles and "ldap_servers" in ldap.host.roles
            assert ldap.host.artifacts == ["/var/log/slapd.log"]
            assert client.host.os_family == "linux"
            assert client.host.config == {"release": 9}
            assert client.host.mh_vars["mh_os_family"] == "Linux"

        @pytest.mark.topology("realm", __import__("pytest_mh_ansible").Topology(
            __import__("pytest_mh_ansible").TopologyDomain("realm", kdc=1)), fixtures=dict(kdc="realm.kdc[0]"))
        def test_mh_role_and_domain(kdc):
            assert kdc.host.name == "kdc1"
            assert kdc.host.domain == "realm"
    """
    )
    pytester.runpytest_subprocess("-i", "hosts.ini").assert_outcomes(passed=2)
    result = pytester.runpytest_subprocess("-i", "hosts.ini", "--mh-limit", "client1:kdc1", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*topology 'client1-ldap1' needs 1 host with role 'ldap' in domain 'default'*"])


def test_plugin__stacked_marks_on_module_class_and_function(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_stack=PAIR
        + textwrap.dedent("""
        pytestmark = pytest.mark.topology(PAIR)

        @pytest.mark.topology(TRIO)
        class TestBoth:
            def test_a(self, mh):
                pass

            @pytest.mark.topology(client=1)
            def test_b(self, mh):
                pass
    """)
    )
    result = project.runpytest_subprocess("-i", "hosts.ini", "--collect-only", "-q", "-o", "mh_default_domain=app")
    ids = sorted(line for line in result.stdout.lines if "::" in line)
    assert ids == [
        "test_stack.py::TestBoth::test_a[pair]",
        "test_stack.py::TestBoth::test_a[trio]",
        "test_stack.py::TestBoth::test_b[client1]",
        "test_stack.py::TestBoth::test_b[pair]",
        "test_stack.py::TestBoth::test_b[trio]",
    ]


def test_plugin__controller_skip(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_ctrlskip=PAIR
        + textwrap.dedent("""
        from pytest_mh_ansible import TopologyController

        class NotHere(TopologyController):
            def skip(self):
                return f"{self.name}: the feature is not installed on {self.hosts['client'].name}"

        GATED = TopologyMark("gated", Topology(TopologyDomain("app", client=1)), controller=NotHere(),
                             fixtures=dict(client="app.client[0]"))

        @pytest.mark.topology([GATED, PAIR])
        def test_a(client):
            pass
    """)
    )
    result = project.runpytest_subprocess("-i", "hosts.ini", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*gated: the feature is not installed on client1*"])


def test_plugin__bad_executor_setting_is_a_usage_error_naming_the_value(project: pytest.Pytester) -> None:
    project.makepyfile(test_a="def test_a():\n    pass\n")
    project.makeini("[pytest]\naddopts = -p no:cacheprovider\nmh_executor = fast\n")
    result = project.runpytest_subprocess("-i", "hosts.ini")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini option mh_executor: 'fast' is not 'warm' or 'standard'*"])


def test_plugin__bad_executor_host_variable_is_a_usage_error_naming_host_and_value(project: pytest.Pytester) -> None:
    project.makepyfile(test_a="def test_a():\n    pass\n")
    project.makefile(".ini", extra="[server]\nserver2 mh_executor=lukewarm\n")
    result = project.runpytest_subprocess("-i", "hosts.ini", "--mh-inventory=extra.ini")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*host server2: mh_executor='lukewarm' is not 'warm' or 'standard'*"])


def test_plugin__local_hosts_run_modules_warm_by_default_and_standard_on_request(project: pytest.Pytester) -> None:
    """The default executor serves module calls from an agent; --mh-executor=standard starts none."""
    project.makepyfile(
        test_a="""
        import pytest
        from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

        CLIENT = TopologyMark("c", Topology(TopologyDomain("app", client=1)), fixtures=dict(client="app.client[0]"))

        @pytest.mark.topology(CLIENT)
        def test_a(client):
            assert client.host.ansible.run("ansible.builtin.command", cmd="echo hi").raw["stdout"] == "hi"
        """
    )
    warm = project.runpytest_subprocess("-i", "hosts.ini", "--log-level=INFO", "-rA")
    warm.assert_outcomes(passed=1)
    assert "warm agent started" in warm.stdout.str()
    standard = project.runpytest_subprocess("-i", "hosts.ini", "--log-level=INFO", "-rA", "--mh-executor=standard")
    standard.assert_outcomes(passed=1)
    assert "warm agent" not in standard.stdout.str()


def test_plugin__collection_imported_from_sys_path_by_the_project_still_resolves(project: pytest.Pytester) -> None:
    """A project's unit tests import their collection's module_utils from sys.path, in the same session."""
    collections = Path(__file__).resolve().parents[2] / "collections"
    project.makeconftest(
        f"""
        import sys
        sys.path.insert(0, {str(collections)!r})
        from ansible_collections.mh_ansible.rollback.plugins.module_utils import _snapshots  # noqa: F401
        """
    )
    project.makepyfile(
        test_a="""
        import pytest
        from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

        CLIENT = TopologyMark("c", Topology(TopologyDomain("app", client=1)), fixtures=dict(client="app.client[0]"))

        @pytest.mark.topology(CLIENT)
        def test_a(client, tmp_path):
            result = client.host.ansible.run("mh_ansible.rollback.host_state", paths=[str(tmp_path)])
            assert result.raw["state"]
        """
    )
    result = project.runpytest_subprocess("-i", "hosts.ini")
    result.assert_outcomes(passed=1)
