"""pytest-mh's utility API through the layer, without hosts: the utility bases, fs, services, tc (local commands)."""

from __future__ import annotations

import inspect
import os
import re
import shlex
import subprocess
import tarfile
from pathlib import Path
from typing import Any, Self

import pytest

import pytest_mh_ansible
from pytest_mh_ansible import Connection as AnsibleConnection
from pytest_mh_ansible import RollbackJournal
from pytest_mh_ansible.compat import (
    MultihostReentrantUtility,
    MultihostUtility,
    mh_utility,
    mh_utility_postpone_setup,
)
from pytest_mh_ansible.compat.conn import Bash, HostConnection, ProcessResult
from pytest_mh_ansible.compat.utils.fs import LinuxFileSystem, StatEntry
from pytest_mh_ansible.compat.utils.hostname import HostnameUtils
from pytest_mh_ansible.compat.utils.journald import JournaldUtils
from pytest_mh_ansible.compat.utils.selinux import SELinuxContext
from pytest_mh_ansible.compat.utils.services import SystemdServices
from pytest_mh_ansible.compat.utils.tc import LinuxTrafficControl


class _Transport:
    """Answers a script by the first regex that matches it, else runs it locally; records every script."""

    def __init__(self, answers: dict[str, tuple[int, str, str]] | None = None) -> None:
        self.answers = answers or {}
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
        proc = subprocess.run(["/bin/sh", "-c", command], input=input, capture_output=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr


class _Host:
    """What the compat utilities need of a host: a name, a pytest-mh connection and the journal."""

    def __init__(self, transport: _Transport | None = None) -> None:
        self.name = self.hostname = "client1"
        self.transport = transport or _Transport()
        self.conn = HostConnection(AnsibleConnection("client1", {}, transport=self.transport), Bash(), host="client1")
        self.journal = RollbackJournal()
        self.journal.open("test")


# -- pytest-mh's names and parameters ----------------------------------------------------------------

# pytest-mh 1.0.30's parameter names of the members this layer had wrong or lacked (self left out).
PYTEST_MH_PARAMETERS = {
    (LinuxFileSystem, "copy"): ["srcpath", "dstpath", "mode", "user", "group"],
    (LinuxFileSystem, "upload"): ["local_path", "remote_path", "mode", "user", "group"],
    (LinuxFileSystem, "upload_to_tmp"): ["local_path", "mode", "user", "group"],
    (LinuxFileSystem, "download"): ["remote_path", "local_path"],
    (LinuxFileSystem, "download_files"): ["paths", "local_path"],
    (LinuxFileSystem, "wc"): ["file", "lines", "word", "bytes", "chars"],
    (LinuxFileSystem, "stat"): ["path"],
    (LinuxFileSystem, "__exit__"): ["exc_type", "exc_val", "exc_tb"],
    (SystemdServices, "start"): ["service", "raise_on_error"],
    (SystemdServices, "stop"): ["service", "raise_on_error"],
    (SystemdServices, "restart"): ["service", "raise_on_error"],
    (SystemdServices, "reload"): ["service", "raise_on_error"],
    (SystemdServices, "status"): ["service", "raise_on_error"],
    (SystemdServices, "get_property"): ["service", "prop", "raise_on_error"],
    (SystemdServices, "reload_daemon"): ["raise_on_error"],
    (SystemdServices, "is_active"): ["service"],
    (SystemdServices, "async_start"): ["service"],
    (SystemdServices, "async_stop"): ["service"],
    (SystemdServices, "async_restart"): ["service"],
    (SystemdServices, "async_reload"): ["service"],
    (SystemdServices, "async_status"): ["service"],
    (SystemdServices, "async_get_property"): ["service", "prop"],
    (SystemdServices, "async_reload_daemon"): [],
    (SystemdServices, "__exit__"): ["exc_type", "exc_val", "exc_tb"],
    (HostnameUtils, "__exit__"): ["exc_type", "exc_val", "exc_tb"],
    (MultihostReentrantUtility, "__exit__"): ["exc_type", "exc_val", "exc_tb"],
    (MultihostUtility, "get_artifacts_list"): ["host", "artifacts_type"],
    (MultihostUtility, "pytest_report_teststatus"): ["report", "config"],
    (JournaldUtils, "journalctl"): [
        "current",
        "unit",
        "lines",
        "since",
        "reverse",
        "grep",
        "output",
        "identifier",
        "system",
        "user",
        "args",
    ],
}


@pytest.mark.parametrize(("cls", "name"), list(PYTEST_MH_PARAMETERS), ids=lambda v: getattr(v, "__name__", v))
def test_compat_utils_api__parameter_names_are_pytest_mh_s(cls: type, name: str) -> None:
    parameters = list(inspect.signature(getattr(cls, name)).parameters)
    assert parameters[1:] == PYTEST_MH_PARAMETERS[(cls, name)]


@pytest.mark.parametrize("cls", [LinuxFileSystem, SystemdServices, LinuxTrafficControl, HostnameUtils, JournaldUtils])
def test_compat_utils_api__every_bundled_utility_is_a_pytest_mh_utility(cls: type[MultihostUtility[Any]]) -> None:
    assert issubclass(cls, MultihostUtility)
    util = cls(_Host())
    assert util.postpone_setup() is util
    assert util._mh_utility_postpone_setup
    assert util.logger is not None
    util.artifacts.add("/var/log/x")
    assert util.get_artifacts_list(util.host, "test") == {"/var/log/x"}
    assert util.pytest_report_teststatus(None, None) is None  # type: ignore[arg-type]


def test_compat_utils_api__reentrant_utilities_are_context_managers() -> None:
    for cls in (LinuxFileSystem, SystemdServices, HostnameUtils):
        assert issubclass(cls, MultihostReentrantUtility)
    assert SystemdServices(_Host()).initial_states == {}


# -- the utility bases --------------------------------------------------------------------------------


class _Calls(MultihostReentrantUtility[Any]):
    def __init__(self, host: Any, *deps: Any) -> None:
        super().__init__(host)
        self.calls: list[str] = []
        self._value = 0

    def setup(self) -> None:
        self.calls.append("setup")

    def teardown(self) -> None:
        self.calls.append("teardown")

    def __enter__(self) -> Self:
        self.calls.append("enter")
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        self.calls.append("exit")

    @property
    def value(self) -> int:
        return self._value

    @value.setter
    def value(self, value: int) -> None:
        self.calls.append(f"set {value}")
        self._value = value


def test_compat_utils_api__reentrant_utility_is_entered_after_setup_and_exited_before_teardown() -> None:
    util = _Calls(_Host())
    util.setup()
    util.teardown()
    util.teardown()
    assert util.calls == ["setup", "enter", "exit", "teardown"]


def test_compat_utils_api__a_postponed_utility_used_before_the_framework_s_setup_is_set_up_once() -> None:
    util = _Calls(_Host()).postpone_setup()
    util.value = 1  # in a role's __init__, say
    util.setup()
    util.teardown()
    assert util.calls == ["setup", "enter", "set 1", "exit", "teardown"]


def test_compat_utils_api__a_property_setter_is_a_use_of_a_postponed_utility() -> None:
    util = _Calls(_Host()).postpone_setup()
    util.setup()
    assert util.calls == []
    util.value = 3
    util.teardown()
    assert util.calls == ["setup", "enter", "set 3", "exit", "teardown"]
    util.setup()  # the next cycle is postponed again
    util.teardown()
    assert len(util.calls) == 5


def test_compat_utils_api__mh_utility_sets_up_enters_exits_and_tears_down() -> None:
    util = _Calls(_Host())
    with mh_utility(util):
        util.value = 1
    assert util.calls == ["setup", "enter", "set 1", "exit", "teardown"]


def test_compat_utils_api__a_failed_enter_tears_the_utility_down() -> None:
    class Broken(_Calls):
        def __enter__(self) -> Self:
            raise RuntimeError("enter")

    util = Broken(_Host())
    with pytest.raises(RuntimeError, match="enter"):
        util.setup()
    assert util.calls == ["setup", "teardown"]
    util.teardown()
    assert util.calls == ["setup", "teardown"]


def test_compat_utils_api__reentrant_utility_must_implement_enter_and_exit() -> None:
    class Half(MultihostReentrantUtility[Any]):
        def __enter__(self) -> Self:
            return self

    with pytest.raises(TypeError, match="abstract"):
        Half(_Host())  # type: ignore[abstract]


def test_compat_utils_api__utilities_given_to_a_constructor_are_its_dependencies() -> None:
    host = _Host()
    fs = LinuxFileSystem(host)
    util = _Calls(host, fs, "not a utility")
    assert util._mh_utility_dependencies == {fs}
    assert fs._mh_utility_dependencies == set()


def test_compat_utils_api__pytest_mh_s_private_flags_are_kept() -> None:
    class Plain(MultihostUtility[Any]):
        pass

    class Setup(Plain):
        def setup(self) -> None:
            pass

    assert (Plain._mh_utility_call_setup, Plain._mh_utility_call_teardown) == (False, False)
    assert (Setup._mh_utility_call_setup, _Calls._mh_utility_call_teardown) == (True, True)
    util = _Calls(_Host()).postpone_setup()
    assert util._mh_utility_used is False
    util.value = 2
    assert util._mh_utility_used is True


def test_compat_utils_api__postpone_decorator_takes_a_class_or_an_object() -> None:
    @mh_utility_postpone_setup
    class Lazy(_Calls):
        pass

    assert Lazy(_Host())._mh_utility_postpone_setup
    assert not _Calls(_Host())._mh_utility_postpone_setup
    assert mh_utility_postpone_setup(_Calls(_Host()))._mh_utility_postpone_setup


# -- StatEntry -----------------------------------------------------------------------------------------


def _stat(path: Path) -> str:
    return subprocess.run(["stat", "--", str(path)], capture_output=True, text=True, check=True,
                          env={**os.environ, "LC_ALL": "C"}).stdout  # fmt: skip


def test_compat_utils_api__stat_entry_of_a_file_matches_os_stat(tmp_path: Path) -> None:
    path = tmp_path / "data"
    path.write_text("12345")
    path.chmod(0o640)
    entry = StatEntry.FromOutput(_stat(path))
    st = path.stat()
    assert (entry.file, entry.link_to, entry.size, entry.file_type) == (str(path), None, 5, "regular file")
    assert (entry.access, entry.flags, entry.links, entry.inode) == ("0640", "-rw-r-----", 1, st.st_ino)
    assert (entry.uid, entry.gid) == (st.st_uid, st.st_gid)
    assert entry.user
    assert entry.group
    assert str(entry.modify_time).startswith("20")
    assert abs((entry.modify_time_epoch or 0) - st.st_mtime) < 86400 + 2
    assert str(entry).startswith(f"({path}:regular file:0640:1:")
    assert repr(entry) == str(entry)


def test_compat_utils_api__stat_entry_of_a_link_and_a_directory(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("target file")
    link = StatEntry.FromOutput(_stat(tmp_path / "link"))
    assert (link.file, link.link_to, link.file_type) == (str(tmp_path / "link"), "target file", "symbolic link")
    directory = StatEntry.FromOutput(_stat(tmp_path))
    assert directory.file_type == "directory"
    assert str(directory.flags).startswith("d")


def test_compat_utils_api__stat_entry_reads_printed_times_and_no_birth_time() -> None:
    output = (
        "  File: /x\n  Size: 3         \tBlocks: 8          IO Block: 4096   regular file\n"
        "Device: 254,0\tInode: 7           Links: 2\n"
        "Access: (0755/-rwxr-xr-x)  Uid: ( 1000/   alice)   Gid: (  100/   users)\n"
        "Access: 2024-05-01 12:00:00.123456789 +0000\nModify: 2024-05-01 12:00:00.000000000 +0200\n"
        "Change: 2024-05-01 12:00:00.000000000 +0000\n Birth: -\n"
    )
    entry = StatEntry.FromOutput(output)
    assert (entry.uid, entry.user, entry.gid, entry.group, entry.links, entry.device) == (
        1000, "alice", 100, "users", 2, "254,0",
    )  # fmt: skip
    assert entry.access_time_epoch_utc == 1714564800
    assert entry.modify_time_epoch_utc is None  # printed in another zone than UTC, as pytest-mh's parser
    assert (entry.birth_time, entry.birth_time_epoch, entry.birth_time_epoch_utc) == (None, None, None)
    with pytest.raises(ValueError, match="More than one"):
        StatEntry.FromOutput(output + output)
    with pytest.raises(ValueError, match="no stat entry"):
        StatEntry.FromOutput("stat: cannot statx '/x': No such file or directory")


def test_compat_utils_api__stat_entry_from_dict_takes_jc_s_names() -> None:
    entry = StatEntry.FromDict({"file": "/x", "type": "directory", "size": 4, "unknown": 1})
    assert (entry.file, entry.file_type, entry.size, entry.user) == ("/x", "directory", 4, None)


# -- LinuxFileSystem (on this machine) --------------------------------------------------------------------


@pytest.fixture
def fs() -> LinuxFileSystem:
    return LinuxFileSystem(_Host())


def test_compat_utils_api__with_fs_puts_back_what_changed_inside_the_block(fs: LinuxFileSystem, tmp_path: Path) -> None:
    conf = tmp_path / "app.conf"
    conf.write_text("old\n")
    fs.write(str(conf), "test")
    with fs:
        fs.write(str(conf), "inner")
        fs.touch(str(tmp_path / "new"))
        with fs:
            fs.rm(str(conf))
            assert not conf.exists()
        assert conf.read_text() == "inner"
    assert conf.read_text() == "test"
    assert not (tmp_path / "new").exists()
    fs.host.journal.close("test")  # the test's change: put back by the journal
    assert conf.read_text() == "old\n"


def test_compat_utils_api__a_role_s_fs_is_put_back_at_teardown(fs: LinuxFileSystem, tmp_path: Path) -> None:
    conf = tmp_path / "app.conf"
    conf.write_text("old\n")
    fs.setup()  # what the plugin does before the test: entered
    fs.write(str(conf), "test", mode="0600")
    fs.mkdir_p(str(tmp_path / "a" / "b"))
    fs.teardown()
    assert conf.read_text() == "old\n"
    assert not (tmp_path / "a").exists()
    journal = fs.host.journal
    journal.close("test")  # the journal's entries are spent: nothing runs twice
    assert conf.read_text() == "old\n"


def test_compat_utils_api__a_state_longer_than_the_journal_s_scope_saves_again_in_the_next_scope(
    fs: LinuxFileSystem, tmp_path: Path
) -> None:
    conf = tmp_path / "app.conf"
    conf.write_text("old")
    journal = fs.host.journal = RollbackJournal()  # type: ignore[misc]
    journal.open("session")
    fs.setup()  # entered for the session (a host's utility, say)
    for test in ("a", "b"):
        journal.open("test")
        fs.write(str(conf), test)
        assert conf.read_text() == test
        journal.close("test")  # the test's end: the journal puts it back
        assert conf.read_text() == "old"
    fs.teardown()
    assert conf.read_text() == "old"


def test_compat_utils_api__backup_tells_whether_the_path_existed_and_restore_puts_it_back(
    fs: LinuxFileSystem, tmp_path: Path
) -> None:
    conf = tmp_path / "app.conf"
    conf.write_text("old")
    assert fs.backup(str(conf)) is True
    assert fs.backup(str(conf)) is True
    assert fs.backup(str(tmp_path / "missing")) is False
    conf.write_text("changed behind its back")
    (tmp_path / "missing").write_text("created")
    assert fs.restore(str(conf)) is True
    assert conf.read_text() == "old"
    assert fs.restore(str(tmp_path / "never")) is False
    fs.host.journal.close("test")
    assert conf.read_text() == "old"
    assert not (tmp_path / "missing").exists()


def test_compat_utils_api__copy_upload_download_take_pytest_mh_s_names(fs: LinuxFileSystem, tmp_path: Path) -> None:
    src, local = tmp_path / "src", tmp_path / "local.bin"
    src.write_text("source")
    local.write_bytes(b"\x00\x01binary\xff")
    fs.copy(srcpath=str(src), dstpath=str(tmp_path / "dst"), mode="0600")
    assert (tmp_path / "dst").read_text() == "source"
    assert (tmp_path / "dst").stat().st_mode & 0o777 == 0o600
    (tmp_path / "dir").mkdir()
    fs.upload(local_path=str(local), remote_path=str(tmp_path / "dir"), mode="0640")  # a directory is replaced
    assert (tmp_path / "dir").read_bytes() == b"\x00\x01binary\xff"
    tmp = fs.upload_to_tmp(local_path=str(local), mode="0644")
    assert Path(tmp).read_bytes() == local.read_bytes()
    assert Path(tmp).stat().st_mode & 0o777 == 0o644
    fs.download(remote_path=str(src), local_path=str(tmp_path / "back"))
    assert (tmp_path / "back").read_text() == "source"
    fs.host.journal.close("test")
    assert not (tmp_path / "dst").exists()
    assert (tmp_path / "dir").is_dir()
    assert not Path(tmp).exists()


def test_compat_utils_api__download_files_makes_one_tarball_of_globs(fs: LinuxFileSystem, tmp_path: Path) -> None:
    logs = tmp_path / "my logs"
    logs.mkdir()
    for name in ("a.log", "b.log", "c.txt"):
        (logs / name).write_text(name)
    out = tmp_path / "out.tgz"
    fs.download_files([f"{logs}/*.log", f"{tmp_path}/nothing*"], str(out))
    with tarfile.open(out) as tar:
        names = sorted(tar.getnames())
    assert names == [f"{logs}/a.log".lstrip("/"), f"{logs}/b.log".lstrip("/")]
    fs.download_files([f"{tmp_path}/nothing*"], str(out))
    with tarfile.open(out) as tar:
        assert tar.getnames() == []


def test_compat_utils_api__sed_wc_chmod_return_results_as_in_pytest_mh(fs: LinuxFileSystem, tmp_path: Path) -> None:
    conf = tmp_path / "app.conf"
    conf.write_text("one two\nthree\n")
    printed = fs.sed("s/one/ONE/", str(conf))
    assert isinstance(printed, ProcessResult)
    assert printed.stdout == "ONE two\nthree"
    assert conf.read_text() == "one two\nthree\n"  # no -i: printed, not changed (pytest-mh's sed)
    fs.sed("s/one/ONE/", str(conf), args=["-i"])
    assert conf.read_text() == "ONE two\nthree\n"
    assert fs.wc(str(conf), lines=True).stdout.split()[0] == "2"
    assert fs.wc(str(conf), word=True).stdout.split()[0] == "3"
    assert fs.wc(str(conf), bytes=True).stdout.split()[0] == "14"
    assert fs.chmod("0600", str(conf)).rc == 0
    assert fs.chown(str(conf), args=["-h"]).rc == 0
    fs.host.journal.close("test")
    assert conf.read_text() == "one two\nthree\n"


def test_compat_utils_api__write_dedents_and_strips_as_pytest_mh(fs: LinuxFileSystem, tmp_path: Path) -> None:
    path = tmp_path / "f"
    fs.write(
        str(path),
        """
        [main]
            key = 1
    """,
    )
    assert path.read_text() == "[main]\n    key = 1"
    fs.append(str(path), "\n  more\n")
    assert path.read_text() == "[main]\n    key = 1more"
    fs.write(str(path), "  kept\n", dedent=False)
    assert path.read_text() == "  kept\n"
    assert fs.read(str(path)) == "  kept"
    assert Path(fs.mktmp(" x \n")).read_text() == "x"


def test_compat_utils_api__mkdir_p_of_an_existing_directory_empties_it_until_the_test_ends(
    fs: LinuxFileSystem, tmp_path: Path
) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "keep").write_text("x")
    fs.mkdir_p(str(tmp_path / "d"), mode="0700")
    assert list((tmp_path / "d").iterdir()) == []
    fs.mkdir_p(str(tmp_path / "new" / "sub"))
    assert (tmp_path / "new" / "sub").is_dir()
    fs.host.journal.close("test")
    assert (tmp_path / "d" / "keep").read_text() == "x"
    assert not (tmp_path / "new").exists()


def test_compat_utils_api__stat_gives_a_stat_entry(fs: LinuxFileSystem, tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("abc")
    entry = fs.stat(str(path))
    assert isinstance(entry, StatEntry)
    assert (entry.size, entry.file_type, entry.file) == (3, "regular file", str(path))
    with pytest.raises(pytest_mh_ansible.ProcessError):
        fs.stat(str(tmp_path / "missing"))


def test_compat_utils_api__a_failed_change_is_still_undone(fs: LinuxFileSystem, tmp_path: Path) -> None:
    conf = tmp_path / "app.conf"
    conf.write_text("old")
    with pytest.raises(pytest_mh_ansible.ProcessError):
        fs.sed("s/x/y/", str(conf), args=["-i", "--no-such-option"])
    conf.write_text("half-changed")
    fs.host.journal.close("test")
    assert conf.read_text() == "old"


# -- SystemdServices (scripts checked; the lab runs them on systemd and sysv hosts) -----------------------


PROBE = r"^if \[ -d /run/systemd/system \]; then systemctl status"
"""The script that reads whether a service runs (and ``status()``); failing commands print ``status`` too."""


def _svc(answers: dict[str, tuple[int, str, str]] | None = None) -> tuple[SystemdServices, _Transport]:
    transport = _Transport({**(answers or {}), r"systemctl|service ": (0, "", "")})
    return SystemdServices(_Host(transport)), transport


def test_compat_utils_api__start_resets_a_failed_unit_first_and_returns_the_result() -> None:
    svc, transport = _svc({PROBE: (3, "Active: inactive (dead)", "")})
    result = svc.start("sssd")
    assert isinstance(result, ProcessResult)
    assert result.rc == 0
    probe, start = transport.scripts
    assert "systemctl status sssd" in probe
    assert start.index("systemctl reset-failed sssd") < start.index("systemctl start sssd")
    assert "service sssd start" in start  # a host without systemd
    assert "journalctl --no-pager -xeu sssd" in start  # printed when it fails
    svc.restart("sssd")
    assert len(transport.scripts) == 3  # the state is probed once per state
    assert "systemctl reset-failed sssd" in transport.scripts[-1]
    assert "reset-failed" not in svc.stop("sssd").error.command
    assert svc.initial_states == {"sssd": False}


def test_compat_utils_api__raise_on_error_is_pytest_mh_s() -> None:
    svc, _ = _svc({PROBE: (0, "", ""), r"systemctl start": (1, "", "failed")})
    assert svc.start("app", raise_on_error=False).rc == 1
    with pytest.raises(pytest_mh_ansible.ProcessError):
        svc.start("app")
    svc, _ = _svc({PROBE: (4, "", "")})
    assert svc.status("nope", raise_on_error=False).rc == 4
    with pytest.raises(pytest_mh_ansible.ProcessError):
        svc.status("nope")


def test_compat_utils_api__touched_services_are_put_back_when_the_state_ends() -> None:
    svc, transport = _svc({PROBE + " sssd": (0, "Active: active", ""), PROBE + " app": (3, "", "")})
    svc.setup()  # entered, as a role's utility
    svc.stop("sssd")
    svc.start("app")
    transport.scripts.clear()
    svc.teardown()
    (restore,) = transport.scripts
    assert restore.index("systemctl daemon-reload") < restore.index("systemctl stop sssd")
    assert restore.index("systemctl stop sssd") < restore.index("systemctl start sssd")
    assert "systemctl stop app" in restore
    assert "systemctl start app" not in restore  # was not running
    assert "systemctl reset-failed sssd" in restore
    svc.host.journal.close("test")
    assert len(transport.scripts) == 1  # the journal's copy of the undo was spent by the exit


def test_compat_utils_api__outside_a_state_the_journal_puts_services_back() -> None:
    svc, transport = _svc({PROBE: (0, "Active: active", "")})
    svc.restart("sssd")
    assert [e.operation for e in svc.host.journal.entries()] == ["services of SystemdServices"]
    transport.scripts.clear()
    svc.host.journal.close("test")
    assert "systemctl start sssd" in transport.scripts[0]


def test_compat_utils_api__services_state_longer_than_the_journal_s_scope() -> None:
    svc, transport = _svc({PROBE: (0, "Active: active", "")})
    journal = svc.host.journal = RollbackJournal()  # type: ignore[misc]
    journal.open("session")
    svc.setup()
    for test in ("a", "b"):
        journal.open("test")
        svc.stop("sssd")
        transport.scripts.clear()
        journal.close("test")
        assert any("systemctl start sssd" in script for script in transport.scripts), test
    svc.teardown()


def test_compat_utils_api__with_svc_nests_a_state() -> None:
    svc, transport = _svc({PROBE: (0, "Active: active", "")})
    svc.stop("a")
    with svc:
        svc.stop("b")
        assert svc.initial_states == {"b": True}
        transport.scripts.clear()
    assert "systemctl start b" in transport.scripts[0]
    assert " a" not in transport.scripts[0]
    assert svc.initial_states == {"a": True}


def test_compat_utils_api__leaving_a_state_with_no_journal_scope_open() -> None:
    svc, transport = _svc({PROBE: (0, "Active: active", "")})
    svc.host.journal = RollbackJournal()  # type: ignore[misc]  # nothing opened yet
    with svc:
        svc.stop("a")
    assert "systemctl start a" in transport.scripts[-1]
    assert svc.initial_states == {}


def test_compat_utils_api__properties_reload_and_is_active() -> None:
    svc, transport = _svc({r"show": (0, "1234\n", ""), r"is-active x": (0, "active", ""), r"is-active": (3, "", "")})
    assert svc.get_property("sssd", "MainPID") == "1234"
    assert transport.scripts[-1] == "systemctl show sssd --value --property MainPID"
    assert svc.is_active("x")
    assert not svc.is_active("y")
    assert svc.reload("sssd").rc == 0
    assert "systemctl reload sssd" in transport.scripts[-1]
    assert svc.reload_daemon(raise_on_error=False).rc == 0
    assert transport.scripts[-1] == "systemctl daemon-reload"


def test_compat_utils_api__pytest_mh_s_failure_helpers_are_kept() -> None:
    svc = SystemdServices(_Host())  # commands run on this machine
    script = svc._debug_failure("sssd", "exit 7")
    assert "journalctl --no-pager -xeu sssd" in script
    assert svc.host.conn.run(script, raise_on_error=False).rc == 7
    assert svc.host.conn.run(f"(exit 5) || ({svc._query_logs_command('sssd')})", raise_on_error=False).rc == 5
    assert svc._query_logs_command("sssd").startswith("rc=$?;")
    assert svc._query_logs_command("sssd").endswith("exit $rc")


def test_compat_utils_api__async_methods_return_the_connection_s_process(monkeypatch: pytest.MonkeyPatch) -> None:
    svc, _ = _svc({PROBE: (3, "", "")})
    started: list[str] = []

    def async_run(command: str, **kwargs: Any) -> str:
        started.append(command)
        return f"process {len(started)}"

    monkeypatch.setattr(svc.host.conn, "async_run", async_run)
    assert svc.async_start("a") == "process 1"
    assert re.search("systemctl reset-failed a.*systemctl start a", started[-1])
    svc.async_stop("a")
    assert "systemctl stop a" in started[-1]
    svc.async_restart("a")
    assert re.search("systemctl reset-failed a.*systemctl restart a", started[-1])
    svc.async_reload("a")
    assert "systemctl reload a" in started[-1]
    svc.async_status("a")
    assert "systemctl status a" in started[-1]
    svc.async_get_property("a", "MainPID")
    assert started[-1] == "systemctl show a --value --property MainPID"
    assert svc.async_reload_daemon() == "process 7"
    assert svc.initial_states == {"a": False}


# -- tc ----------------------------------------------------------------------------------------------------


def test_compat_utils_api__a_postponed_tc_sets_itself_up_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    tc = LinuxTrafficControl(_Host()).postpone_setup()
    calls: list[str] = []
    monkeypatch.setattr(pytest_mh_ansible.TrafficControl, "add_delay", lambda *a, **k: calls.append("add"))
    tc.setup()
    assert not tc._mh_set_up
    tc.add_delay("server1", "10ms")
    assert tc._mh_set_up
    assert calls == ["add"]
    tc.teardown()
    assert not tc._mh_set_up


# -- SELinuxContext --------------------------------------------------------------------------------------


def test_compat_utils_api__selinux_context_is_a_plain_class_with_pytest_mh_s_attributes() -> None:
    context = SELinuxContext("system_u", "object_r", "etc_t", "s0", None)
    assert vars(context) == {
        "user": "system_u", "role": "object_r", "type": "etc_t", "sensitivity": "s0", "categories": None,
    }  # fmt: skip
    assert context == SELinuxContext.FromOutput("system_u:object_r:etc_t:s0 /etc")
    assert context != SELinuxContext("system_u", "object_r", "etc_t", "s0", "c1")
    assert len({context, SELinuxContext("system_u", "object_r", "etc_t", "s0", None)}) == 1
