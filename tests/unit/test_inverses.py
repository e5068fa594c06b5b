"""The journal recorder's inverses: what is recorded, what is said, and never "reverted" for nothing."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_mh_ansible import ModuleResult, RollbackJournal
from pytest_mh_ansible._private.rollback.inverses import JournalRecorder, _forget_auto_marks


@dataclass
class _Out:
    stdout: str
    rc: int = 0


@dataclass
class _Conn:
    """Answers a command by the first key it contains; a list of answers is used up one per command."""

    answers: dict[str, str | list[str]]
    commands: list[str] = field(default_factory=list)

    def run(self, command: str, **kwargs: Any) -> _Out:
        self.commands.append(command)
        for key, out in self.answers.items():
            if key in command:
                return _Out(out.pop(0) if isinstance(out, list) else out)
        return _Out("")

    def _mh_script(self, source: bytes, request: Any) -> tuple[int, bytes, bytes] | None:
        return None  # no agent: the journal's snapshots are modules


@dataclass
class _Modules:
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    packages_changes: int = 0

    def run(self, module: str, args: Any = None, **kwargs: Any) -> ModuleResult:
        self.calls.append((module, {**(args or {}), **kwargs}))
        return ModuleResult.from_raw("server1", module, {"changed": True})

    def packages_changed(self) -> None:
        self.packages_changes += 1


_ENV = "PATH=$PATH:/usr/sbin:/sbin; DEBIAN_FRONTEND=noninteractive DEBIAN_PRIORITY=critical LANG=C LC_ALL=C "


def _forget(names: tuple[str, ...]) -> str:
    marks = " ".join(f"-e 'Package: {name}'" for name in names)
    ranges = " ".join(f"-e '/^Package: {name}$/,/^$/d'" for name in names)
    states = "/var/lib/apt/extended_states"
    return f"if [ -f {states} ] && grep -qxF {marks} {states}; then sed -i {ranges} {states}; fi"


def dpkg_purge(*names: str) -> str:
    """The undo's first try: dpkg purges ``names``, then their stanzas leave apt's auto-installed marks."""
    return f"{_ENV}dpkg --purge {' '.join(names)} >/dev/null 2>&1 && {_forget(names)}"


def apt_purge(*names: str) -> str:
    """Where dpkg refuses: apt-get as the apt module runs it (the marks of what dpkg purged first go too)."""
    return (
        f"{_ENV}apt-get -q -y -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold --purge remove "
        f"{' '.join(names)} >/dev/null 2>&1 && {_forget(names)}"
    )


@dataclass
class _Host:
    name: str = "server1"
    conn: _Conn = field(default_factory=lambda: _Conn({}))
    ansible: _Modules = field(default_factory=_Modules)


def _package_calls(host: Any) -> list[tuple[str, dict[str, Any]]]:
    """The module calls of an undo, without the journal's own snapshot of apt's marks file."""
    return [call for call in host.ansible.calls if not call[0].startswith("mh_ansible.rollback.")]


def _changed(module: str) -> ModuleResult:
    return ModuleResult.from_raw("server1", module, {"changed": True})


def test_recorder__second_change_of_a_snapshotted_path__no_reverted_line_of_its_own() -> None:
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    host: Any = _Host()
    journal.open("test")
    for content in ("a", "b"):
        token = recorder.prepare(
            host, "ansible.builtin.copy", {"dest": "/etc/a.conf", "content": content}, revert_paths=None
        )
        recorder.commit(token, _changed("ansible.builtin.copy"))
    journal.close("test")
    assert journal.history == [
        "[server1] changed: ansible.builtin.copy dest=/etc/a.conf",
        "[server1] changed: ansible.builtin.copy dest=/etc/a.conf (nothing to undo of its own: an earlier snapshot "
        "in this scope restores these paths)",
        "[server1] reverted: ansible.builtin.copy dest=/etc/a.conf",
    ]
    assert [module for module, _ in host.ansible.calls] == [
        "mh_ansible.rollback.snapshot",
        "mh_ansible.rollback.restore",
    ]


@dataclass
class _AgentConn(_Conn):
    """A connection with an agent: answers the journal's snapshot scripts with ``script_answers`` in turn."""

    script_answers: list[tuple[int, bytes, bytes]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def _mh_script(self, source: bytes, request: Any) -> tuple[int, bytes, bytes] | None:
        assert b"def _mh_snapshot" in source
        self.requests.append(request)
        return self.script_answers.pop(0)


def test_recorder__host_with_an_agent__snapshot_and_restore_by_it_and_logged_as_the_modules() -> None:
    journal = RollbackJournal(record_calls=True)
    recorder = JournalRecorder(journal)
    conn = _AgentConn({}, script_answers=[(0, b'{"bytes": 3}\n', b""), (0, b'{"restored": 1, "warnings": []}\n', b"")])
    host: Any = _Host(conn=conn)
    host.journal = journal
    journal.open("test")
    token = recorder.prepare(
        host, "ansible.builtin.lineinfile", {"path": "/etc/a.conf", "line": "x"}, revert_paths=None
    )
    recorder.commit(token, _changed("ansible.builtin.lineinfile"))
    journal.close("test")
    assert host.ansible.calls == []  # no module of the journal's own
    name = conn.requests[0]["name"]
    assert [(r["op"], r["name"]) for r in conn.requests] == [("snapshot", name), ("restore", name)]
    assert conn.requests[0]["paths"] == ["/etc/a.conf"]
    # lineinfile creates missing parents: the agent's script finds the topmost missing one, no command does.
    assert conn.requests[0]["missing_parents"] is True
    assert conn.commands == []
    # The export still sees the modules that do the same (it replays them with ansible-playbook).
    assert [(call.name, call.reverting) for call in journal.closed_calls if call.name.startswith("mh_ansible")] == [
        ("mh_ansible.rollback.snapshot", False),
        ("mh_ansible.rollback.restore", True),
    ]


def test_recorder__agent_script_fails__the_modules_do_the_snapshot_and_the_restore() -> None:
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    conn = _AgentConn(
        {"dirname": "/etc/a.conf"},
        script_answers=[(1, b"", b"Traceback: boom"), (0, b'{"error": "snapshot not found"}\n', b"")],
    )
    host: Any = _Host(conn=conn)
    journal.open("test")
    token = recorder.prepare(
        host, "ansible.builtin.lineinfile", {"path": "/etc/a.conf", "line": "x"}, revert_paths=None
    )
    recorder.commit(token, _changed("ansible.builtin.lineinfile"))
    journal.close("test")
    assert [module for module, _ in host.ansible.calls] == [
        "mh_ansible.rollback.snapshot",
        "mh_ansible.rollback.restore",
    ]
    assert journal.history[-1] == "[server1] reverted: ansible.builtin.lineinfile path=/etc/a.conf"
    # Without the agent's script, one command finds the topmost missing parent for the module.
    assert len(conn.commands) == 1
    assert "dirname" in conn.commands[0]


def test_recorder__latest_on_an_installed_package__not_reverted_never_reverted() -> None:
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    host: Any = _Host(conn=_Conn({"dpkg-query": [":dpkg:\nadduser\ntree\n", "adduser\ntree\n"]}))
    journal.open("test")
    token = recorder.prepare(host, "ansible.builtin.apt", {"name": "tree", "state": "latest"}, revert_paths=None)
    recorder.commit(token, _changed("ansible.builtin.apt"))
    journal.close("test")
    assert journal.history == [
        "[server1] not reverted: ansible.builtin.apt name=tree state=latest: state=latest may have upgraded tree "
        "(a downgrade is not attempted)"
    ]
    assert journal.unreverted == [("test", journal.history[0])]
    assert _package_calls(host) == []


def test_recorder__latest_installing_a_new_package__removed_and_upgrade_of_the_other_noted() -> None:
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    host: Any = _Host(conn=_Conn({"dpkg-query": [":dpkg:\nadduser\ntree\n", "adduser\njq\nlibjq1\ntree\n"]}))
    journal.open("test")
    token = recorder.prepare(
        host, "ansible.builtin.apt", {"name": ["tree", "jq"], "state": "latest"}, revert_paths=None
    )
    recorder.commit(token, _changed("ansible.builtin.apt"))
    journal.close("test")
    assert [line for _, line in journal.unreverted] == [
        "[server1] not reverted: ansible.builtin.apt name=['tree', 'jq'] state=latest: "
        "state=latest may have upgraded tree (a downgrade is not attempted)"
    ]
    assert host.conn.commands[-1] == dpkg_purge("jq", "libjq1")  # its dependency too
    assert _package_calls(host) == []
    assert host.ansible.packages_changes == 1


def test_recorder__apt_install_purges_what_it_brought_and_reinstalls_what_it_removed_but_no_orphan() -> None:
    """An orphan that was there before (an auto-installed package nothing needs) stays: no autoremove."""
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    before = ":dpkg:\nadduser\nmawk\norphan-lib\n"
    after = "adduser\ngawk\nlibsigsegv2\norphan-lib\n"  # gawk conflicts with mawk: apt removed it
    host: Any = _Host(conn=_Conn({"dpkg-query": [before, after]}))
    journal.open("test")
    token = recorder.prepare(host, "ansible.builtin.apt", {"name": "gawk"}, revert_paths=None)
    recorder.commit(token, _changed("ansible.builtin.apt"))
    journal.close("test")
    assert host.conn.commands[-1] == dpkg_purge("gawk", "libsigsegv2")
    assert _package_calls(host) == [("ansible.builtin.package", {"name": ["mawk"], "state": "present"})]
    assert journal.history[-1] == "[server1] reverted: ansible.builtin.apt name=gawk"


@pytest.mark.parametrize("rc", [0, 100, 127], ids=["apt-get-purges", "apt-refused", "no-apt-get"])
def test_recorder__dpkg_refuses_the_purge__apt_get_purges_else_the_apt_module(rc: int) -> None:
    """dpkg refuses (a package that another one now needs): apt-get resolves it as the module would; where
    apt-get fails too, the module removes it its own way, or fails with Ansible's message (its own
    change tells the executor)."""
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    probes = {
        "command -v dpkg-query": _Out(":dpkg:\nadduser\n"),  # the before-state probe: it holds the next key too
        "dpkg-query -W": _Out("adduser\ntree\n"),
        "dpkg --purge": _Out("", rc=2),
    }
    conn = _ExitConn(rc, probes)
    host: Any = _Host(conn=conn)  # type: ignore[arg-type]
    journal.open("test")
    token = recorder.prepare(host, "ansible.builtin.apt", {"name": "tree"}, revert_paths=None)
    recorder.commit(token, _changed("ansible.builtin.apt"))
    journal.close("test")
    assert conn.commands[-2:] == [dpkg_purge("tree"), apt_purge("tree")]
    module = [("ansible.builtin.apt", {"name": ["tree"], "state": "absent", "purge": True})]
    assert _package_calls(host) == ([] if rc == 0 else module)
    assert host.ansible.packages_changes == (1 if rc == 0 else 0)
    assert journal.history[-1] == "[server1] reverted: ansible.builtin.apt name=tree"


_STATES = """Package: libc6
Architecture: amd64
Auto-Installed: 0

Package: libstdc++6.x
Architecture: amd64
Auto-Installed: 1

Package: libstdc++6
Architecture: amd64
Auto-Installed: 1

Package: toilet-fonts
Architecture: all
Auto-Installed: 1

"""


def test_forget_auto_marks__drops_exactly_the_purged_packages_stanzas(tmp_path: Path) -> None:
    """The command runs here with the system's sh, grep and sed: a name with regex characters ('+', '.')
    matches itself only, and a file without any of the names is not rewritten."""
    states = tmp_path / "extended_states"
    states.write_text(_STATES)
    command = _forget_auto_marks(["libstdc++6", "toilet-fonts", "not-there"], str(states))
    subprocess.run(["sh", "-c", command], check=True)
    assert states.read_text() == _STATES.replace(
        "Package: libstdc++6\nArchitecture: amd64\nAuto-Installed: 1\n\n", ""
    ).replace("Package: toilet-fonts\nArchitecture: all\nAuto-Installed: 1\n\n", "")
    os.utime(states, ns=(0, 10**9))
    subprocess.run(["sh", "-c", _forget_auto_marks(["libstdc++6"], str(states))], check=True)
    assert states.stat().st_mtime_ns == 10**9  # nothing to drop: untouched
    assert "Package: libstdc++6.x\n" in states.read_text()


def test_recorder__call_interrupted_in_flight__inverse_recorded_as_for_a_change() -> None:
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    host: Any = _Host()
    journal.open("test")
    token = recorder.prepare(host, "ansible.builtin.copy", {"dest": "/etc/a.conf"}, revert_paths=None)
    interrupted = ModuleResult.from_raw("server1", "ansible.builtin.copy", {"changed": True, "mh_interrupted": True})
    recorder.commit(token, interrupted)
    assert journal.pending() == ["[server1] ansible.builtin.copy dest=/etc/a.conf (interrupted in flight)"]


@dataclass
class _ExitConn:
    """Records the commands; a probe (by the first key its command contains) answers as given, any
    other command (the undo's) exits ``rc``."""

    rc: int
    probes: dict[str, _Out]
    commands: list[str] = field(default_factory=list)

    def run(self, command: str, **kwargs: Any) -> _Out:
        self.commands.append(command)
        return next((out for key, out in self.probes.items() if key in command), _Out("", rc=self.rc))

    def _mh_script(self, source: bytes, request: Any) -> tuple[int, bytes, bytes] | None:
        return None  # no agent: the journal's snapshots are modules


@pytest.mark.parametrize(
    ("rc", "falls_back"),
    [(0, False), (6, False), (127, True), (8, True)],
    ids=["deleted", "gone-already", "no-such-command", "refused"],
)
def test_recorder__created_user_and_group__deleted_by_one_command_else_by_the_module(rc: int, falls_back: bool) -> None:
    """userdel/groupdel as the modules run them, in one command; 6 means the test deleted it already."""
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    # getent says there is no such account (exit 2): the call creates it
    absent = "passwd\t2\t\nprimary\t1\t\ngroups\t1\t\nshadow\t2\t\nlocal\t1\ngroup\t2\t\ngroup_local\t1\n"
    conn = _ExitConn(
        rc,
        {
            "getent passwd": _Out(absent + "new_home\t1\t/home/u1\nmail\t1\t/var/mail/u1\n"),
            "getent group": _Out("group\t2\t\ngroup_local\t1\n"),
        },
    )
    host: Any = _Host(conn=conn)  # type: ignore[arg-type]
    journal.open("test")
    for module, args in (("ansible.builtin.group", {"name": "g1"}), ("ansible.builtin.user", {"name": "u1"})):
        token = recorder.prepare(host, module, {**args, "state": "present"}, revert_paths=None)
        recorder.commit(token, _changed(module))
    journal.close("test")
    assert conn.commands[2:] == [
        "PATH=$PATH:/usr/sbin:/sbin; userdel --remove --force u1",
        "PATH=$PATH:/usr/sbin:/sbin; groupdel g1",
    ]
    expected = [
        ("ansible.builtin.user", {"name": "u1", "state": "absent", "remove": True, "force": True}),
        ("ansible.builtin.group", {"name": "g1", "state": "absent"}),
    ]
    assert host.ansible.calls == (expected if falls_back else [])
    assert journal.history[-2:] == [
        "[server1] reverted: ansible.builtin.user name=u1 state=present",
        "[server1] reverted: ansible.builtin.group name=g1 state=present",
    ]


@pytest.mark.parametrize(("rc", "falls_back"), [(0, False), (1, True)], ids=["started", "start-failed"])
def test_recorder__stopped_service__started_again_by_one_command_else_by_the_module(rc: int, falls_back: bool) -> None:
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    conn = _ExitConn(rc, {"is-active": _Out("active\nenabled\n")})
    host: Any = _Host(conn=conn)  # type: ignore[arg-type]
    journal.open("test")
    token = recorder.prepare(host, "ansible.builtin.service", {"name": "app", "state": "stopped"}, revert_paths=None)
    recorder.commit(token, _changed("ansible.builtin.service"))
    journal.close("test")
    assert conn.commands[1] == (
        "PATH=$PATH:/usr/sbin:/sbin; if [ -d /run/systemd/system ]; then systemctl start app; "
        "else service app start; fi >/dev/null 2>&1"
    )
    fallback = [("ansible.builtin.service", {"name": "app", "state": "started"})]
    assert host.ansible.calls == (fallback if falls_back else [])
    assert journal.history[-1] == "[server1] reverted: ansible.builtin.service name=app state=stopped"


def test_recorder__service_change_with_more_than_a_state__undone_by_the_module() -> None:
    """``enabled`` (or any other argument) is put back by the module, which knows every init system."""
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    conn = _ExitConn(0, {"is-active": _Out("active\nenabled\n")})
    host: Any = _Host(conn=conn)  # type: ignore[arg-type]
    journal.open("test")
    args = {"name": "app", "state": "stopped", "enabled": False}
    token = recorder.prepare(host, "ansible.builtin.service", args, revert_paths=None)
    recorder.commit(token, _changed("ansible.builtin.service"))
    journal.close("test")
    assert len(conn.commands) == 1
    assert host.ansible.calls == [("ansible.builtin.service", {"name": "app", "state": "started", "enabled": True})]


def test_recorder__service_state_unreadable__not_revertible_never_stopped_on_undo() -> None:
    """A restart's undo was "stop" when the state could not be read: now the change is reported instead."""
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    conn = _ExitConn(0, {"is-active": _Out("", rc=1)})  # the probe printed nothing
    host: Any = _Host(conn=conn)  # type: ignore[arg-type]
    journal.open("test")
    token = recorder.prepare(host, "ansible.builtin.service", {"name": "app", "state": "restarted"}, revert_paths=None)
    recorder.commit(token, _changed("ansible.builtin.service"))
    journal.close("test")
    assert len(conn.commands) == 1
    assert host.ansible.calls == []
    assert journal.unreverted == [
        (
            "test",
            "[server1] not reverted: ansible.builtin.service name=app state=restarted: the state of service 'app' "
            "could not be read before the call: not revertible",
        )
    ]


def test_recorder__enabling_a_static_unit__its_boot_state_reported_its_run_state_reverted() -> None:
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    conn = _ExitConn(0, {"is-active": _Out("inactive\nstatic\n")})
    host: Any = _Host(conn=conn)  # type: ignore[arg-type]
    journal.open("test")
    args = {"name": "app", "state": "started", "enabled": True}
    token = recorder.prepare(host, "ansible.builtin.service", args, revert_paths=None)
    recorder.commit(token, _changed("ansible.builtin.service"))
    journal.close("test")
    assert host.ansible.calls == [("ansible.builtin.service", {"name": "app", "state": "stopped"})]
    assert len(journal.unreverted) == 1
    assert "was 'static' before the call" in journal.unreverted[0][1]


def test_snapshot__missing_parents_unknown__refused_loudly_never_left_behind() -> None:
    """The parents a module creates are in the snapshot; when they cannot be found, the call is refused."""
    from pytest_mh_ansible import RollbackError
    from pytest_mh_ansible._private.rollback import snapshots

    host: Any = _Host(conn=_ExitConn(1, {}))  # type: ignore[arg-type]
    with pytest.raises(RollbackError, match=r"/etc/new/a\.conf: its missing parent directories could not be found"):
        snapshots._topmost_missing(host, ["/etc/new/a.conf"])


def test_snapshot__what_a_restore_could_not_put_back__reported_not_reverted() -> None:
    from pytest_mh_ansible._private.rollback import snapshots

    journal = RollbackJournal()
    journal.open("test")
    host: Any = _Host()
    host.journal = journal
    snapshots._report(host, "mh-3", ["/run/app.sock: cannot recreate the socket (File name too long), left absent"])
    assert journal.unreverted == [
        (
            "test",
            "[server1] not reverted: snapshot mh-3: /run/app.sock: cannot recreate the socket (File name too long), "
            "left absent",
        )
    ]


def test_recorder__packages_unreadable__not_revertible_never_purges_everything() -> None:
    """An empty or failed listing would make every installed package look new: the change is reported."""
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    conn = _ExitConn(0, {"command -v dpkg-query": _Out(":dpkg:\n", rc=3)})
    host: Any = _Host(conn=conn)  # type: ignore[arg-type]
    journal.open("test")
    token = recorder.prepare(host, "ansible.builtin.apt", {"name": "tree"}, revert_paths=None)
    recorder.commit(token, _changed("ansible.builtin.apt"))
    journal.close("test")
    assert not any("purge" in command for command in conn.commands)
    assert journal.unreverted[0][1].endswith(
        "the installed packages could not be read before the call (exit 3): not revertible"
    )


def test_recorder__a_held_package_removed__installed_and_held_again() -> None:
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    probes = {
        "command -v dpkg-query": _Out(":dpkg:\nadduser\nhold:tree\nstates:0f\n"),
        "dpkg-query -W": _Out("adduser\n"),
        "md5sum": _Out("0f\n"),
    }
    conn = _ExitConn(0, probes)
    host: Any = _Host(conn=conn)  # type: ignore[arg-type]
    journal.open("test")
    token = recorder.prepare(host, "ansible.builtin.apt", {"name": "tree", "state": "absent"}, revert_paths=None)
    recorder.commit(token, _changed("ansible.builtin.apt"))
    journal.close("test")
    assert _package_calls(host) == [("ansible.builtin.package", {"name": ["tree"], "state": "present"})]
    assert conn.commands[-1] == "PATH=$PATH:/usr/sbin:/sbin; printf 'tree hold\\n' | dpkg --set-selections"


def test_recorder__apt_changed_only_its_marks__caught_and_put_back() -> None:
    """The apt module marks a package it was asked for manual and says "ok": the marks file is compared."""
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    probes = {
        "command -v dpkg-query": _Out(":dpkg:\nadduser\nlibfoo\nstates:0f\n"),
        "dpkg-query -W": _Out("adduser\nlibfoo\n"),
        "md5sum": _Out("ab\n"),  # after the call: changed
    }
    host: Any = _Host(conn=_ExitConn(0, probes))  # type: ignore[arg-type]
    journal.open("test")
    token = recorder.prepare(host, "ansible.builtin.apt", {"name": "libfoo"}, revert_paths=None)
    recorder.commit(token, ModuleResult.from_raw("server1", "ansible.builtin.apt", {"changed": False}))
    journal.close("test")
    modules = [module for module, _ in host.ansible.calls]
    assert modules == ["mh_ansible.rollback.snapshot", "mh_ansible.rollback.restore"]
    assert host.ansible.calls[0][1]["paths"] == ["/var/lib/apt/extended_states"]
    assert journal.history[-1] == "[server1] reverted: ansible.builtin.apt name=libfoo"


def test_recorder__a_call_that_failed__its_inverse_runs_labelled_so() -> None:
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    host: Any = _Host(conn=_ExitConn(0, {}))  # type: ignore[arg-type]
    journal.open("test")
    token = recorder.prepare(host, "ansible.builtin.copy", {"dest": "/etc/a.conf"}, revert_paths=None)
    failed = ModuleResult.from_raw("server1", "ansible.builtin.copy", {"changed": True, "mh_failed": True})
    recorder.commit(token, failed)
    journal.close("test")
    assert [module for module, _ in host.ansible.calls] == [
        "mh_ansible.rollback.snapshot",
        "mh_ansible.rollback.restore",
    ]
    assert journal.history[-1] == (
        "[server1] reverted: ansible.builtin.copy dest=/etc/a.conf (failed: undone in case it changed the host "
        "before it failed)"
    )


def test_recorder__sysctl__file_snapshotted_and_running_value_set_back() -> None:
    journal = RollbackJournal()
    recorder = JournalRecorder(journal)
    conn = _ExitConn(0, {"p=/proc/sys/net/ipv4/ip_forward": _Out("0\n"), "cat /proc/sys": _Out("1\n")})
    host: Any = _Host(conn=conn)  # type: ignore[arg-type]
    journal.open("test")
    args = {"name": "net.ipv4.ip_forward", "value": "1", "sysctl_set": True}
    token = recorder.prepare(host, "ansible.posix.sysctl", args, revert_paths=None)
    recorder.commit(token, _changed("ansible.posix.sysctl"))
    journal.close("test")
    assert host.ansible.calls[0][1]["paths"] == ["/etc/sysctl.conf"]
    assert conn.commands[-1] == "PATH=$PATH:/usr/sbin:/sbin; sysctl -q -w net.ipv4.ip_forward=0"
