"""The compat layer's Coredumpd, Auditd and SELinux, without hosts: modes, commands, parsing, test outcomes."""

from __future__ import annotations

import re
import shlex
import textwrap
from typing import Any

import pytest

from pytest_mh_ansible import Connection as AnsibleConnection
from pytest_mh_ansible.compat import _alias
from pytest_mh_ansible.compat._mode_check import ModeCheck
from pytest_mh_ansible.compat.conn import Bash, Connection
from pytest_mh_ansible.compat.utils.auditd import Auditd
from pytest_mh_ansible.compat.utils.coredumpd import Coredumpd
from pytest_mh_ansible.compat.utils.selinux import SELinux, SELinuxContext


class _Transport:
    """Answers a script by the first regex that matches it (else rc 0, no output); records the scripts."""

    def __init__(self, answers: dict[str, tuple[int, str, str]]) -> None:
        self.answers = answers
        self.scripts: list[str] = []

    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass

    def exec(self, command: str, *, input: bytes | None = None, become: Any = None, become_user: Any = None,
             timeout: float | None = None) -> tuple[int, bytes, bytes]:  # fmt: skip
        words = shlex.split(command)
        script = words[-1] if words[:3] == ["/usr/bin/env", "bash", "-c"] else command
        self.scripts.append(script)
        for pattern, (rc, out, err) in self.answers.items():
            if re.search(pattern, script):
                return rc, out.encode(), err.encode()
        return 0, b"", b""


class _Host:
    def __init__(self, transport: _Transport) -> None:
        self.name = self.hostname = "client1"
        self.conn = Connection(AnsibleConnection("client1", {}, transport=transport), Bash(), host="client1")


def _host(answers: dict[str, tuple[int, str, str]]) -> tuple[_Host, _Transport]:
    transport = _Transport(answers)
    return _Host(transport), transport


def test_compat_crash_utils__pytest_mh_names_resolve_to_the_layer() -> None:
    _alias.install()
    import pytest_mh.utils.auditd
    import pytest_mh.utils.coredumpd
    import pytest_mh.utils.selinux

    assert pytest_mh.utils.coredumpd.Coredumpd is Coredumpd
    assert pytest_mh.utils.auditd.Auditd is Auditd
    assert pytest_mh.utils.selinux.SELinux is SELinux
    assert pytest_mh.utils.selinux.SELinuxContext is SELinuxContext


# -- modes ---------------------------------------------------------------------------------------------


def test_compat_crash_utils__modes_are_checked_when_given_and_when_set() -> None:
    host, _ = _host({})
    with pytest.raises(ValueError, match="Coredumpd mode must be 'fail', 'warn' or 'ignore', got 'error'"):
        Coredumpd(host, None, mode="error")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="avc_mode"):
        Auditd(host, avc_mode="Fail")  # type: ignore[arg-type]
    coredumpd = Coredumpd(host, None)
    assert coredumpd.mode == "ignore"  # pytest-mh's default
    coredumpd.mode = "warn"
    assert coredumpd.mode == "warn"
    with pytest.raises(ValueError, match="got 'loud'"):
        coredumpd.mode = "loud"  # type: ignore[assignment]
    assert coredumpd.mode == "warn"


def test_compat_crash_utils__the_check_follows_the_running_test_and_watches_what_is_set_up() -> None:
    host, _ = _host({})
    coredumpd = Coredumpd(host, None, mode="fail")
    check = ModeCheck()
    check.pytest_configure(None)  # type: ignore[arg-type]  # as pytest does when it registers the plugin
    try:
        coredumpd.setup()  # no test running: nothing watched
        assert check.watched == {}
        check.running = "test_x.py::test_a"
        coredumpd.setup()
        coredumpd.setup()  # once per test
        assert check.watched == {"test_x.py::test_a": [coredumpd]}
        check.pytest_runtest_logfinish("test_x.py::test_a")
        assert check.watched == {}
    finally:
        check.pytest_unconfigure(None)  # type: ignore[arg-type]
    assert ModeCheck.active is None


# -- Coredumpd -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("core.sssd_be.0.5e0a1b2c3d4e4f5a.1234.1733400000000000.zst", ("1234", "1733400000000000")),
        ("core.sleep.0.5e0a.77.1733400000000000", ("77", "1733400000000000")),
        ("/var/lib/systemd/coredump/core.a.b.9.10.xz", ("9", "10")),
    ],
)
def test_compat_crash_utils__core_file_names_give_pid_and_timestamp(name: str, parsed: tuple[str, str]) -> None:
    host, _ = _host({})
    assert Coredumpd(host, None).parse_core_file_name(name) == parsed


def test_compat_crash_utils__short_core_file_names_are_value_errors() -> None:
    host, _ = _host({})
    with pytest.raises(ValueError, match=r"Invalid coredump name: core\.1234"):
        Coredumpd(host, None).parse_core_file_name("core.1234")


def _coredumpd(found: str, **kwargs: Any) -> tuple[Coredumpd, _Transport]:
    host, transport = _host({r"^cat /proc/sys/kernel/core_pattern$": (0, "core\n", ""), r"^find ": (0, found, "")})
    coredumpd = Coredumpd(host, None, **kwargs)
    coredumpd._mh_since = lambda: 1733400000.25  # type: ignore[method-assign]
    return coredumpd, transport


def test_compat_crash_utils__core_files_since_the_test_start_in_path_and_where_core_pattern_puts_them() -> None:
    coredumpd, transport = _coredumpd("/var/lib/systemd/coredump/core.app.0.b.42.1733400001\n/tmp/core.43\n")
    assert coredumpd.list_core_files() == ["core.app.0.b.42.1733400001", "/tmp/core.43"]
    find = next(script for script in transport.scripts if script.startswith("find "))
    assert "/tmp" in find
    assert "/var/lib/systemd/coredump" in find
    assert "-newermt @1733400000.250" in find
    assert coredumpd.artifacts == {"/var/lib/systemd/coredump/core.app.0.b.42.1733400001", "/tmp/core.43"}
    coredumpd.artifacts = {"/var/log/app.log"}
    assert coredumpd.get_artifacts_list(coredumpd.host, "test") == {
        "/var/log/app.log",
        "/var/lib/systemd/coredump/core.app.0.b.42.1733400001",
        "/tmp/core.43",
    }


def test_compat_crash_utils__the_filter_keeps_matching_core_files() -> None:
    coredumpd, _ = _coredumpd("/tmp/core.sssd.1\n/tmp/core.sleep.2\n", mode="fail", filter=r"sssd")
    assert coredumpd._mh_check() == ["/tmp/core.sssd.1"]
    coredumpd.filter = "nothing-like-it"
    assert coredumpd._mh_check() == []


# -- Auditd --------------------------------------------------------------------------------------------

RECORDS = textwrap.dedent("""\
    type=AVC msg=audit(1733400000.100:7): avc:  denied  { read } for  pid=1 comm="old" tclass=file
    type=AVC msg=audit(1733400000.300:8): avc:  denied  { read } for  pid=2 comm="sssd" tclass=file
    type=USER_AVC msg=audit(1733400002.000:9): avc:  denied  { send_msg } for comm="dbus" tclass=dbus
""")


def test_compat_crash_utils__denials_since_the_test_start_by_their_stamp_and_filter() -> None:
    host, transport = _host({"ausearch": (0, RECORDS, "")})
    auditd = Auditd(host, avc_mode="warn")
    auditd._mh_since = lambda: 1733400000.25  # type: ignore[method-assign]
    assert [re.search(r'comm="(\w+)"', line)[1] for line in auditd._mh_check()] == ["sssd", "dbus"]  # type: ignore[index]
    auditd.avc_filter = "sssd"
    assert len(auditd._mh_check()) == 1
    script = transport.scripts[-1]
    assert "ausearch -m AVC,USER_AVC -ts $(LC_ALL=C date -d @1733400000 '+%x %T')" in script
    assert " -i " not in script
    assert auditd.artifacts == {"/var/log/audit/audit.log"}


# -- SELinux -------------------------------------------------------------------------------------------


def test_compat_crash_utils__selinux_context_from_ls_output() -> None:
    five = SELinuxContext.FromOutput("unconfined_u:object_r:user_home_t:s0:c0.c1023 /root/x\n")
    assert (five.user, five.role, five.type, five.sensitivity, five.categories) == (
        "unconfined_u",
        "object_r",
        "user_home_t",
        "s0",
        "c0.c1023",
    )
    four = SELinuxContext.FromOutput("system_u:object_r:etc_t:s0 /etc/passwd\n")
    assert four.categories is None
    assert str(four) == "(system_u:object_r:etc_t:s0:None)"
    assert four == SELinuxContext("system_u", "object_r", "etc_t", "s0", None)
    assert four != five
    with pytest.raises(ValueError, match="SELinux is not enabled on the host"):
        SELinuxContext.FromOutput("? /etc/passwd\n")
    with pytest.raises(ValueError, match="got 2 labels"):
        SELinuxContext.FromOutput("a:b /etc/passwd\n")


def test_compat_crash_utils__file_context_uses_ls_zd_and_a_missing_file_is_none() -> None:
    host, transport = _host(
        {r"ls -Zd -- /etc$": (0, "system_u:object_r:etc_t:s0 /etc\n", ""), r"/missing$": (2, "", "No such file")}
    )
    selinux = SELinux(host)
    assert selinux.get_file_context("/etc") == SELinuxContext("system_u", "object_r", "etc_t", "s0", None)
    assert selinux.get_file_context("/missing") is None
    assert transport.scripts[0] == "ls -Zd -- /etc"


# -- the test outcome ----------------------------------------------------------------------------------

SUITE_CONFTEST = textwrap.dedent("""
    import pytest

    from pytest_mh_ansible.compat.utils.coredumpd import Coredumpd


    class Host:
        name = hostname = "client1"


    class FakeCoredumpd(Coredumpd):
        def list_core_files(self):
            self._corefiles = ["core.app.0.b.42.1733400001"]
            return list(self._corefiles)


    @pytest.fixture
    def coredumpd(request):
        util = FakeCoredumpd(Host(), None, mode=request.node.get_closest_marker("mode").args[0])
        util.setup()
        yield util
        util.teardown()
""")

SUITE = textwrap.dedent("""
    import pytest

    @pytest.mark.mode("warn")
    def test_warn(coredumpd):
        pass

    @pytest.mark.mode("fail")
    def test_fail(coredumpd):
        pass

    @pytest.mark.mode("ignore")
    def test_ignore(coredumpd):
        pass

    @pytest.mark.mode("fail")
    def test_fail_skipped(coredumpd):
        pytest.skip("not here")

    @pytest.mark.mode("warn")
    def test_warn_failing_by_itself(coredumpd):
        assert False, "its own failure"

    @pytest.mark.mode("fail")
    def test_fail_mode_changed_in_the_test(coredumpd):
        coredumpd.mode = "ignore"
""")


def test_compat_crash_utils__modes_pass_warn_or_fail_the_test(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makeini("[pytest]\nmarkers = mode: the Coredumpd mode\n")
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "pytest_mh_ansible.compat.plugin", "-p", "no:randomly", "-p", "no:cacheprovider", "-v", "-rA"
    )
    text = result.stdout.str()
    outcomes = dict(re.findall(r"^test_suite\.py::(\w+) (PASSED\S*|FAILED|SKIPPED)\b.*%\]$", text, re.MULTILINE))
    assert outcomes == {
        "test_warn": "PASSED/COREDUMP",
        "test_fail": "FAILED",
        "test_ignore": "PASSED",
        "test_fail_skipped": "SKIPPED",
        "test_warn_failing_by_itself": "FAILED",
        "test_fail_mode_changed_in_the_test": "PASSED",
    }, text
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*test_suite.py::test_fail: core dumps on host 'client1' during the test (FakeCoredumpd, mode 'fail'):",
            "client1: core.app.0.b.42.1733400001",
        ]
    )
    assert "its own failure" in text  # a test failed by itself keeps its failure text
    # the report section of the failed ones (a warned test counts as COREDUMPS, not passed: no PASSES entry)
    assert text.count("- mh coredumps -") == 2, text
    summary = text.strip().splitlines()[-1]
    for count in ("2 failed", "2 passed", "1 skipped", "1 COREDUMPS"):
        assert count in summary, summary
    assert re.search(r"findings of utilities in 'warn' mode =+\ntest_suite\.py::test_warn \(FakeCoredumpd\):", text), (
        text
    )
