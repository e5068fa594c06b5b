"""Artifacts, per-test logs, JUnit properties, the header, --mh-show-hosts and timeouts, as a user sees them."""

from __future__ import annotations

import tarfile
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

LOCAL = "ansible_connection=local ansible_python_interpreter=/usr/bin/python3"

HEADER = """
import pytest
from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

PAIR = TopologyMark("pair", Topology(TopologyDomain("app", client=1, server=1)),
                    fixtures=dict(client="app.client[0]", server="app.server[0]"))
"""


@pytest.fixture
def rep(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project whose client host asks for artifacts (a glob, a directory and a missing file) in ``data/``.

    Host names are this module's own: the plugin locks hosts by name across pytest processes.
    """
    data = pytester.path / "data"
    (data / "dir" / "sub").mkdir(parents=True)
    (data / "app.log").write_text("app log\n")
    (data / "other.log").write_text("other log\n")
    (data / "notes.txt").write_text("not asked for\n")
    (data / "dir" / "sub" / "deep.txt").write_text("deep\n")
    artifacts = f'["{data}/*.log", "{data}/dir", "{data}/missing.log"]'
    pytester.makefile(
        ".ini",
        hosts=textwrap.dedent(f"""\
            [client]
            repclient1 {LOCAL} mh_artifacts='{artifacts}' ansible_password=Sup3r-S3cret-41

            [server]
            repserver1 {LOCAL}

            [all:vars]
            mh_domain=app
        """),
    )
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider --import-mode=importlib\n")
    return pytester


def _on_host(root: Path, path: Path) -> Path:
    """Where a host file lands under a host's artifact directory."""
    return root / str(path).lstrip("/")


def _two_modules(pytester: pytest.Pytester, body: str) -> None:
    for module in ("test_web.py", "sub/test_web.py"):
        target = pytester.path / module
        target.parent.mkdir(exist_ok=True)
        target.write_text(HEADER + textwrap.dedent(body))


FAILING = """
@pytest.mark.topology(PAIR)
def test_a(client, server):
    client.host.conn.run("echo Sup3r-S3cret-41 > /dev/null; true")
    server.host.conn.run("uname -s")
    assert False, "boom"
"""

PASSING = """
@pytest.mark.topology(PAIR)
def test_ok(client):
    client.host.conn.run("true")
"""


def test_reporting__same_named_tests_in_two_modules_do_not_collide(rep: pytest.Pytester) -> None:
    _two_modules(rep, FAILING + PASSING)
    result = rep.runpytest_subprocess("-i", "hosts.ini")
    result.assert_outcomes(passed=2, failed=2)
    data = rep.path / "data"
    for module in ("test_web", "sub/test_web"):
        test_dir = rep.path / "artifacts" / "tests" / module / "test_a[pair]"
        host_dir = test_dir / "client" / "repclient1"
        assert _on_host(host_dir, data / "app.log").read_text() == "app log\n"
        assert _on_host(host_dir, data / "other.log").read_text() == "other log\n"
        assert _on_host(host_dir, data / "dir" / "sub" / "deep.txt").read_text() == "deep\n"
        assert not _on_host(host_dir, data / "notes.txt").exists()
        assert not _on_host(host_dir, data / "missing.log").exists()
        assert (test_dir / "test.log").is_file()
        # on-failure (the default): nothing for the passing test
        assert not (rep.path / "artifacts" / "tests" / module / "test_ok[pair]").exists()
    result.stdout.fnmatch_lines(["*mh artifacts*", "*artifacts and log of this test: *test_web/test_a?pair?"])


def test_reporting__never_and_always(rep: pytest.Pytester) -> None:
    _two_modules(rep, PASSING)
    result = rep.runpytest_subprocess("-i", "hosts.ini", "test_web.py", "--mh-collect-artifacts=never")
    result.assert_outcomes(passed=1)
    assert not (rep.path / "artifacts").exists()
    result = rep.runpytest_subprocess(
        "-i", "hosts.ini", "test_web.py", "--mh-collect-artifacts=always", "--mh-artifacts-dir", "out"
    )
    result.assert_outcomes(passed=1)
    test_dir = rep.path / "out" / "tests" / "test_web" / "test_ok[pair]"
    assert _on_host(test_dir / "client" / "repclient1", rep.path / "data" / "app.log").is_file()
    assert "[repclient1] conn: true -> rc=0" in (test_dir / "test.log").read_text()
    # always: the session and topology phases too
    assert _on_host(rep.path / "out" / "session" / "repclient1", rep.path / "data" / "app.log").is_file()
    assert _on_host(rep.path / "out" / "topologies" / "pair" / "repclient1", rep.path / "data" / "app.log").is_file()


def test_reporting__skipped_tests_get_nothing(rep: pytest.Pytester) -> None:
    rep.makepyfile(
        test_skip=HEADER
        + textwrap.dedent("""
        @pytest.mark.topology(PAIR)
        def test_s(client):
            pytest.skip("not today")
        """)
    )
    result = rep.runpytest_subprocess("-i", "hosts.ini", "--mh-collect-artifacts=on-failure")
    result.assert_outcomes(skipped=1)
    assert not (rep.path / "artifacts" / "tests").exists()


def test_reporting__bare_collect_artifacts_before_a_path(rep: pytest.Pytester) -> None:
    _two_modules(rep, PASSING)
    result = rep.runpytest_subprocess("-i", "hosts.ini", "--mh-collect-artifacts", "sub/test_web.py")
    result.assert_outcomes(passed=1)  # only sub/test_web.py ran: the path was not swallowed
    assert (rep.path / "artifacts" / "tests" / "sub" / "test_web" / "test_ok[pair]" / "test.log").is_file()
    assert not (rep.path / "artifacts" / "tests" / "test_web").exists()
    result = rep.runpytest_subprocess("-i", "hosts.ini", "sub/test_web.py", "--mh-collect-artifacts")
    result.assert_outcomes(passed=1)
    result = rep.runpytest_subprocess("-i", "hosts.ini", "--mh-collect-artifacts=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*invalid choice: 'sometimes' (choose from never, on-failure, always)*"])


def test_reporting__compressed_artifacts(rep: pytest.Pytester) -> None:
    rep.makepyfile(test_web=HEADER + FAILING)
    result = rep.runpytest_subprocess("-i", "hosts.ini", "--mh-compress-artifacts")
    result.assert_outcomes(failed=1)
    archive = rep.path / "artifacts" / "tests" / "test_web" / "test_a[pair]" / "client" / "repclient1.tar.gz"
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    data = str(rep.path / "data").lstrip("/")
    assert {f"{data}/app.log", f"{data}/other.log", f"{data}/dir/sub/deep.txt"} <= names
    assert f"{data}/notes.txt" not in names


def test_reporting__log_of_a_failing_test(rep: pytest.Pytester) -> None:
    rep.makepyfile(test_web=HEADER + FAILING)
    result = rep.runpytest_subprocess("-i", "hosts.ini", "--mh-log-path", "logs/all.log")
    result.assert_outcomes(failed=1)
    log = (rep.path / "artifacts" / "tests" / "test_web" / "test_a[pair]" / "test.log").read_text()
    assert "Sup3r-S3cret-41" not in log
    assert "[repclient1] conn: echo ******** > /dev/null; true -> rc=0" in log
    assert "[repserver1] conn: uname -s -> rc=0" in log
    for section in ("setup test_web.py::test_a[pair]", "call test_web.py::test_a[pair]", "call: failed"):
        assert f"===== {section} =====" in log
    combined = (rep.path / "logs" / "all.log").read_text()
    assert "session start: inventory hosts.ini" in combined
    assert "[repserver1] conn: uname -s -> rc=0" in combined
    assert "Sup3r-S3cret-41" not in combined
    # the console stays quiet: no DEBUG command lines in the captured-log section
    assert "conn: uname -s" not in result.stdout.str()


def test_reporting__junit_properties_and_user_properties(rep: pytest.Pytester) -> None:
    rep.makepyfile(
        test_web=HEADER
        + textwrap.dedent("""
        @pytest.mark.topology(PAIR)
        def test_a(client, request):
            assert ("mh_topology", "pair") in request.node.user_properties
            assert ("mh_role:client", "repclient1") in request.node.user_properties

        def test_plain(request):
            assert request.node.user_properties == []
        """)
    )
    result = rep.runpytest_subprocess("-i", "hosts.ini", "--junitxml=junit.xml")
    result.assert_outcomes(passed=2)
    cases = {case.get("name"): case for case in ET.parse(rep.path / "junit.xml").iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["test_a[pair]"].iter("property")}
    assert props == {
        "mh_topology": "pair",
        "mh_hosts": "repclient1,repserver1",
        "mh_role:client": "repclient1",
        "mh_role:server": "repserver1",
    }
    assert list(cases["test_plain"].iter("property")) == []


def test_reporting__header_and_topologies(rep: pytest.Pytester) -> None:
    rep.makepyfile(
        test_web=HEADER
        + textwrap.dedent("""
        BIG = TopologyMark("big", Topology(TopologyDomain("app", client=3)), fixtures=dict(clients="app.client"))

        @pytest.mark.topology([PAIR, BIG])
        def test_a(mh):
            pass
        """)
    )
    result = rep.runpytest_subprocess("-i", "hosts.ini")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "mh-ansible inventory: hosts.ini (2 hosts)",
            "mh-ansible domain 'app': client: repclient1; server: repserver1",
            "*collected 2 items*",
            "mh-ansible topology 'pair': runnable (app.client: repclient1; app.server: repserver1)",
            "mh-ansible topology 'big': not runnable: *",
        ]
    )


def test_reporting__show_hosts_exits_without_running_tests(rep: pytest.Pytester) -> None:
    rep.makepyfile(
        test_web=HEADER
        + textwrap.dedent("""
        @pytest.mark.topology(PAIR)
        def test_a(mh):
            raise AssertionError("must not run")
        """)
    )
    result = rep.runpytest_subprocess("-i", "hosts.ini", "--mh-show-hosts")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "*pytest-mh-ansible: hosts and topologies*",
            "mh-ansible domain 'app': client: repclient1; server: repserver1",
            "mh-ansible topology 'pair': runnable (*)",
            "*no tests ran*",
        ]
    )
    assert "must not run" not in result.stdout.str()
    assert not (rep.path / "artifacts").exists()


def test_reporting__dynamic_artifacts_from_roles_and_utilities(rep: pytest.Pytester) -> None:
    extra = rep.path / "extra"
    extra.mkdir()
    (extra / "role.txt").write_text("role\n")
    (extra / "util.txt").write_text("util\n")
    (extra / "host.txt").write_text("host\n")
    rep.makeconftest(f"""
        from pytest_mh_ansible import MultihostHost, MultihostRole, MultihostUtility

        class Util(MultihostUtility):
            artifacts = ["{extra}/util.txt"]

        class HostUtil(MultihostUtility):
            artifacts = {{"test": ["{extra}/host.txt"], "session_setup": ["{extra}/none"]}}

        class Host(MultihostHost):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.hostutil = HostUtil(self)

        class Client(MultihostRole):
            def __init__(self, mh, role, host):
                super().__init__(mh, role, host)
                self.util = Util(host)

            @property
            def artifacts(self):
                return {{"test": ["{extra}/role.txt"]}}

        def pytest_mh_register(registry):
            registry.role("client", Client)
            registry.host("client", Host)
    """)
    rep.makepyfile(test_web=HEADER + FAILING)
    result = rep.runpytest_subprocess("-i", "hosts.ini")
    result.assert_outcomes(failed=1)
    host_dir = rep.path / "artifacts" / "tests" / "test_web" / "test_a[pair]" / "client" / "repclient1"
    assert _on_host(host_dir, extra / "role.txt").read_text() == "role\n"
    assert _on_host(host_dir, extra / "util.txt").read_text() == "util\n"
    assert _on_host(host_dir, extra / "host.txt").read_text() == "host\n"
    assert _on_host(host_dir, rep.path / "data" / "app.log").is_file()


def test_reporting__timeout_stops_the_test_and_teardown_runs(rep: pytest.Pytester) -> None:
    rep.makepyfile(
        test_slow=HEADER
        + textwrap.dedent("""
        import time
        from pathlib import Path

        @pytest.fixture
        def marker_file(client):
            yield
            Path("teardown-ran").write_text("yes")

        @pytest.mark.topology(PAIR)
        def test_global(client, marker_file):
            time.sleep(60)

        @pytest.mark.topology(PAIR)
        @pytest.mark.mh_timeout(0.5)
        def test_marked(client):
            client.host.conn.run("sleep 60")

        @pytest.mark.topology(PAIR)
        @pytest.mark.mh_timeout(30)
        def test_in_time(client):
            time.sleep(2)
        """)
    )
    started = time.monotonic()
    result = rep.runpytest_subprocess("-i", "hosts.ini", "--mh-timeout", "1", "--strict-markers")
    assert time.monotonic() - started < 40
    result.assert_outcomes(failed=2, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_global?pair?: timed out after 1 s (mh_timeout)*",
            "*test_marked?pair?: timed out after 0.5 s (mh_timeout)*",
        ]
    )
    assert (rep.path / "teardown-ran").read_text() == "yes"


def test_reporting__timeout_marker_is_registered_without_an_inventory(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_x="""
        import pytest

        @pytest.mark.mh_timeout(5)
        def test_x():
            pass
        """
    )
    result = pytester.runpytest_subprocess("--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
