"""Tests of the mh_ansible.rollback collection: its module_utils directly, its modules through the ansible CLI."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.mh_ansible.rollback.plugins.module_utils import _fsstate, _hoststate, _snapshots
from rollback_cli import COLLECTION, COLLECTIONS, LocalAnsible

IS_ROOT = os.geteuid() == 0
NOBODY, NOGROUP = 65534, 65534
needs_root = pytest.mark.skipif(not IS_ROOT, reason="changing owners needs root")


def make_tree(root: Path) -> Path:
    """A small tree with every kind of entry the modules must handle."""
    (root / "etc" / "conf.d" / "deep").mkdir(parents=True)
    (root / "etc" / "app.conf").write_text("port = 80\n")
    (root / "etc" / "conf.d" / "a.conf").write_text("a = 1\n")
    (root / "etc" / "conf.d" / "deep" / "b.conf").write_text("b = 2\n")
    (root / "etc" / "binary").write_bytes(bytes(range(256)) * 10)
    (root / "etc" / "suid").write_text("#!/bin/sh\n")
    (root / "etc" / "suid").chmod(0o4755)
    (root / "etc" / "private").mkdir(mode=0o700)
    (root / "etc" / "private").chmod(0o700)
    (root / "etc" / "private" / "key").write_text("secret\n")
    (root / "etc" / "becomes_dir").write_text("file now\n")
    (root / "etc" / "becomes_file").mkdir()
    (root / "etc" / "becomes_file" / "inner").write_text("inner\n")
    (root / "etc" / "link").symlink_to("app.conf")
    (root / "etc" / "dangling").symlink_to("does/not/exist")
    (root / "etc" / "app.log").write_text("log line 1\n")
    os.mkfifo(root / "etc" / "fifo")
    if IS_ROOT:
        os.chown(root / "etc" / "conf.d" / "a.conf", NOBODY, NOGROUP)
    return root / "etc"


# -- _fsstate, directly ------------------------------------------------------------------------------------------


def test_walk__records_every_kind_parents_first(tmp_path: Path) -> None:
    etc = make_tree(tmp_path)
    records = _fsstate.walk(str(etc), exclude=["*.log"])
    by_path = {rec["path"]: rec for rec in records}
    paths = [rec["path"] for rec in records]
    assert paths[0] == str(etc)
    assert paths.index(str(etc / "conf.d")) < paths.index(str(etc / "conf.d" / "deep" / "b.conf"))
    assert str(etc / "app.log") not in by_path
    assert by_path[str(etc / "suid")]["mode"] == 0o4755
    private = dict(by_path[str(etc / "private")])
    assert private.pop("xattrs", {}) == {}  # recorded (none here) where the file system lists them
    assert private == {
        "path": str(etc / "private"),
        "type": "directory",
        "mode": 0o700,
        "uid": os.getuid(),
        "gid": os.getgid(),
    }
    assert by_path[str(etc / "dangling")]["target"] == "does/not/exist"
    assert by_path[str(etc / "link")]["type"] == "symlink"
    assert by_path[str(etc / "fifo")]["type"] == "other"
    assert by_path[str(etc / "fifo")]["kind"] == "fifo"
    assert "sha256" not in by_path[str(etc / "fifo")]
    assert by_path[str(etc / "app.conf")]["sha256"] == _fsstate.sha256_file(str(etc / "app.conf"))
    assert _fsstate.walk(str(tmp_path / "missing")) == [{"path": str(tmp_path / "missing"), "type": "absent"}]
    unhashed = _fsstate.walk(str(etc / "app.conf"), hash_content=False)[0]
    assert "sha256" not in unhashed
    assert unhashed["size"] == 10
    assert "mtime" in unhashed


def test_walk__skips_excluded_directories_and_skip_paths(tmp_path: Path) -> None:
    etc = make_tree(tmp_path)
    paths = {rec["path"] for rec in _fsstate.walk(str(etc), exclude=["conf.d/deep"], skip=[str(etc / "private")])}
    assert str(etc / "conf.d" / "a.conf") in paths
    assert not {str(etc / "conf.d" / "deep"), str(etc / "conf.d" / "deep" / "b.conf")} & paths
    assert not any(path.startswith(str(etc / "private")) for path in paths)


def test_differences__names_each_changed_attribute() -> None:
    base = {"path": "/x", "type": "file", "mode": 0o644, "uid": 0, "gid": 0, "size": 1, "sha256": "a"}
    assert _fsstate.differences(base, dict(base)) == []
    changed = dict(base, mode=0o600, uid=1, sha256="b")
    assert _fsstate.differences(changed, base) == [
        ("content", "sha256 b", "sha256 a"),
        ("mode", "0600", "0644"),
        ("owner", "1", "0"),
    ]
    assert _fsstate.differences({"path": "/x", "type": "directory", "mode": 0o755, "uid": 0, "gid": 0}, base) == [
        ("type", "directory", "file")
    ]
    assert _fsstate.summary([("mode", "0600", "0644"), ("content", "", "")]) == "mode 0600 -> 0644, content changed"


def _snapshot(root: str, blobs: Path, exclude: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    records = _fsstate.walk(root, exclude, hash_content=False)
    for rec in records:
        if rec["type"] == "file":
            rec["sha256"], _ = _snapshots.store_blob(rec["path"], str(blobs))
    return records


def test_plan_and_apply_restore__round_trip(tmp_path: Path) -> None:
    etc = make_tree(tmp_path / "tree")
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    recorded = _snapshot(str(etc), blobs, ("*.log",))
    before = _fsstate.walk(str(etc), ("*.log",))

    (etc / "app.conf").write_text("port = 8080\n")
    (etc / "suid").chmod(0o755)
    (etc / "private" / "key").unlink()
    (etc / "new" / "nested").mkdir(parents=True)
    (etc / "becomes_dir").unlink()
    (etc / "becomes_dir").mkdir()
    (etc / "becomes_dir" / "x").write_text("x")
    (etc / "becomes_file" / "inner").unlink()
    (etc / "becomes_file").rmdir()
    (etc / "becomes_file").write_text("now a file")
    (etc / "link").unlink()
    (etc / "link").symlink_to("elsewhere")
    (etc / "fifo").unlink()
    (etc / "app.log").write_text("excluded, left alone\n")

    steps = _fsstate.plan_restore(recorded, ("*.log",))
    actions = {(step["path"], step["action"]) for step in steps}
    assert (str(etc / "new"), "remove") in actions
    assert (str(etc / "new" / "nested"), "remove") not in actions, "a removed subtree is one step"
    assert (str(etc / "becomes_dir"), "remove") in actions
    assert (str(etc / "becomes_dir"), "create") in actions
    assert (str(etc / "private" / "key"), "create") in actions
    assert (str(etc / "fifo"), "create") in actions

    warnings = _fsstate.apply_restore(steps, lambda sha: str(blobs / sha))
    assert warnings == []
    assert _fsstate.walk(str(etc), ("*.log",)) == before
    assert (etc / "app.log").read_text() == "excluded, left alone\n"
    assert _fsstate.plan_restore(recorded, ("*.log",)) == []


def test_apply_restore__recreates_a_removed_root_with_its_parents_and_removes_a_created_one(tmp_path: Path) -> None:
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("f\n")
    recorded = _snapshot(str(tmp_path / "a" / "b" / "f"), blobs)
    absent = _snapshot(str(tmp_path / "later"), blobs)
    (tmp_path / "a" / "b" / "f").unlink()
    (tmp_path / "a" / "b").rmdir()
    (tmp_path / "later" / "sub").mkdir(parents=True)

    for records in (recorded, absent):
        _fsstate.apply_restore(_fsstate.plan_restore(records), lambda sha: str(blobs / sha))
    assert (tmp_path / "a" / "b" / "f").read_text() == "f\n"
    assert not (tmp_path / "later").exists()


def test_step_diff__content_for_small_text_summary_otherwise(tmp_path: Path) -> None:
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "text").write_text("old\n")
    (tmp_path / "t" / "bin").write_bytes(b"\0\1")
    recorded = _snapshot(str(tmp_path / "t"), blobs)
    (tmp_path / "t" / "text").write_text("new\n")
    (tmp_path / "t" / "text").chmod(0o600)
    (tmp_path / "t" / "bin").write_bytes(b"\0\2")
    diffs = {
        step["path"]: _fsstate.step_diff(step, lambda sha: str(blobs / sha)) for step in _fsstate.plan_restore(recorded)
    }
    text = diffs[str(tmp_path / "t" / "text")]
    assert (text["before"], text["after"]) == ("new\n", "old\n")
    assert "mode 0600 -> 0644" in text["before_header"]
    binary = diffs[str(tmp_path / "t" / "bin")]
    assert binary["before"].startswith("content sha256 ")
    assert binary["after_header"] == str(tmp_path / "t" / "bin")


# -- _hoststate, directly -----------------------------------------------------------------------------------------


def test_hoststate__parses_passwd_group_and_package_lists(tmp_path: Path) -> None:
    (tmp_path / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n# comment\nbroken\nbad:x:no:0::/:/bin/sh\n")
    (tmp_path / "group").write_text("sudo:x:27:bob,alice\nempty:x:100:\n")
    assert _hoststate.read_users(str(tmp_path / "passwd")) == {
        "root": {"uid": 0, "gid": 0, "home": "/root", "shell": "/bin/bash"}
    }
    assert _hoststate.read_groups(str(tmp_path / "group")) == {
        "sudo": {"gid": 27, "members": ["alice", "bob"]},
        "empty": {"gid": 100, "members": []},
    }
    assert _hoststate.parse_dpkg("bash 5.2 install ok installed\nold 1.0 deinstall ok config-files\n") == {
        "bash": "5.2",
        "old": "1.0 (deinstall ok config-files)",
    }
    assert _hoststate.parse_rpm("kernel 6.1-1.x86_64\nkernel 6.2-1.x86_64\n") == {"kernel": "6.1-1.x86_64,6.2-1.x86_64"}
    packages, warning = _hoststate.read_packages(lambda argv: (0, "", ""), lambda name: None)
    assert packages == {}
    assert "neither dpkg-query nor rpm" in (warning or "")


def test_hoststate__sysv_status_in_parallel_with_a_timeout(tmp_path: Path) -> None:
    init_d, rc_d = tmp_path / "init.d", tmp_path / "rc2.d"
    init_d.mkdir()
    rc_d.mkdir()
    scripts = {"up": "exit 0", "down": "exit 3", "slow1": "sleep 30", "slow2": "sleep 30"}
    for name, body in scripts.items():
        (init_d / name).write_text(f"#!/bin/sh\n{body}\n")
        (init_d / name).chmod(0o755)
    (init_d / "README").write_text("not a script")
    (rc_d / "S01up").symlink_to("../init.d/up")
    services = _hoststate.read_sysv_services(str(init_d), str(rc_d), timeout=1.0)
    assert services == {
        "down": {"active": "inactive", "sub": "dead", "enabled": "disabled"},
        "slow1": {"active": "unknown", "sub": "timeout", "enabled": "disabled"},
        "slow2": {"active": "unknown", "sub": "timeout", "enabled": "disabled"},
        "up": {"active": "active", "sub": "running", "enabled": "enabled"},
    }


class _Systemctl:
    """``run`` for :func:`_hoststate.read_systemd_services`: systemctl's answers, unit directories in a tmp dir."""

    def __init__(self, unit_dir: Path) -> None:
        self.unit_dir = unit_dir
        self.calls: list[str] = []

    def __call__(self, argv: list[str]) -> tuple[int, str, str]:
        self.calls.append(argv[1])
        if argv[1] == "list-units":
            return 0, "ssh.service loaded active running OpenBSD Secure Shell server\n", ""
        if argv[1] == "show":
            return 0, f"UnitPath={self.unit_dir} {self.unit_dir.parent / 'missing'}\n", ""
        states = {"ssh.service": "enabled", "app.service": "disabled"}
        if (self.unit_dir / "multi-user.target.wants" / "app.service").is_symlink():
            states["app.service"] = "enabled"
        return 0, "".join(f"{name} {state} enabled\n" for name, state in states.items()), ""


def test_hoststate__unit_file_states_are_read_again_only_when_a_unit_directory_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time
    from types import SimpleNamespace

    units = tmp_path / "system"
    (units / "multi-user.target.wants").mkdir(parents=True)
    (units / "app.service").write_text("[Install]\nWantedBy=multi-user.target\n")
    (units / "session-3.scope").write_text("[Scope]\n")
    systemctl = _Systemctl(units)
    # Just made: within the two seconds in which a rewrite could keep its times, so no signature yet.
    services, warning, unit_files = _hoststate.read_systemd_services(systemctl)
    assert warning is None
    assert unit_files is None
    assert services["app.service"] == {"active": "inactive", "sub": "dead", "enabled": "disabled"}
    clock = SimpleNamespace(time=lambda: time.time() + 10)  # the directories have been still for 10 s
    monkeypatch.setattr(_hoststate, "time", clock)
    first, _, unit_files = _hoststate.read_systemd_services(systemctl)
    assert first == services
    assert unit_files is not None
    assert unit_files["enabled"] == {"ssh.service": "enabled", "app.service": "disabled"}
    systemctl.calls.clear()
    again, _, same = _hoststate.read_systemd_services(systemctl, unit_files)
    assert again == first
    assert same == unit_files
    assert systemctl.calls == ["list-units", "show"]  # list-unit-files not run
    # A login's scope comes and goes: not a unit file's state.
    (units / "session-4.scope").write_text("[Scope]\n")
    assert _hoststate.read_systemd_services(systemctl, unit_files)[2] == unit_files
    # Enabling adds a symlink: read again, and the new state is seen.
    (units / "multi-user.target.wants" / "app.service").symlink_to("../app.service")
    systemctl.calls.clear()
    enabled, _, changed = _hoststate.read_systemd_services(systemctl, unit_files)
    assert "list-unit-files" in systemctl.calls
    assert enabled["app.service"]["enabled"] == "enabled"
    assert changed is not None
    assert changed["signature"] != unit_files["signature"]
    # A unit file's content changed, same size: its times say so.
    signature = _hoststate.unit_files_signature([str(units)], now=time.time() + 10)
    time.sleep(0.02)  # past a coarse timestamp tick
    (units / "app.service").write_text("[Install]\nWantedBy=multi-user.targeX\n")
    assert _hoststate.unit_files_signature([str(units)], now=time.time() + 10) != signature


def test_hoststate__without_the_unit_path_the_states_are_read_each_time(tmp_path: Path) -> None:
    systemctl = _Systemctl(tmp_path)

    def old_systemd(argv: list[str]) -> tuple[int, str, str]:
        if argv[1] == "show":  # a manager without the UnitPath property answers nothing for it
            systemctl.calls.append("show")
            return 0, "", ""
        return systemctl(argv)

    services, warning, unit_files = _hoststate.read_systemd_services(old_systemd, {"signature": "", "enabled": {}})
    assert unit_files is None
    assert warning is None
    assert systemctl.calls == ["list-units", "show", "list-unit-files"]
    assert services["app.service"]["enabled"] == "disabled"


def test_collection_unit_tests__pass() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:benchmark", "tests/unit"],
        cwd=COLLECTION,
        env={**os.environ, "PYTHONPATH": str(COLLECTIONS)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- the modules, through the ansible CLI -------------------------------------------------------------------------


def mutate(etc: Path) -> None:
    """Change the tree in every way a test could."""
    (etc / "app.conf").write_text("port = 8080\n")
    (etc / "binary").write_bytes(b"\0" * 10)
    (etc / "suid").chmod(0o755)
    (etc / "private").chmod(0o755)
    (etc / "private" / "key").unlink()
    (etc / "created.conf").write_text("new\n")
    (etc / "new" / "nested" / "deeper").mkdir(parents=True)
    (etc / "new" / "nested" / "deeper" / "f").write_text("f\n")
    (etc / "becomes_dir").unlink()
    (etc / "becomes_dir" / "sub").mkdir(parents=True)
    (etc / "becomes_file" / "inner").unlink()
    (etc / "becomes_file").rmdir()
    (etc / "becomes_file").write_text("now a file\n")
    (etc / "link").unlink()
    (etc / "link").symlink_to("binary")
    (etc / "dangling").unlink()
    (etc / "fifo").unlink()
    (etc / "app.log").write_text("log line 2\n")
    if IS_ROOT:
        os.chown(etc / "app.conf", NOBODY, NOGROUP)
        os.chown(etc / "conf.d" / "a.conf", 0, 0)
        os.lchown(etc / "link", NOBODY, NOGROUP)


def test_snapshot_and_restore__undo_every_kind_of_change(tmp_path: Path, local_ansible: LocalAnsible) -> None:
    etc = make_tree(tmp_path / "tree")
    backup = tmp_path / "backup"
    absent = tmp_path / "tree" / "absent_then_created"
    state_args = {"paths": [str(etc), str(absent)], "exclude": ["*.log"], "packages": False, "services": False}
    restore = {"mh_ansible.rollback.restore": {"name": "t1", "backup_dir": str(backup), "remove": False}}

    snap, before = local_ansible.playbook(
        [
            {
                "mh_ansible.rollback.snapshot": {
                    "name": "t1",
                    "backup_dir": str(backup),
                    "paths": [str(etc), str(absent)],
                    "exclude": ["*.log"],
                }
            },
            {"mh_ansible.rollback.host_state": state_args},
        ]
    )
    assert snap.changed
    assert snap["paths"][str(etc)] == {"exists": True, "type": "directory", "entries": 16}
    assert snap["paths"][str(absent)] == {"exists": False, "type": "absent", "entries": 0}
    assert snap["bytes"] > 2560
    assert stat.S_IMODE(backup.stat().st_mode) == 0o700
    assert not before.changed

    mutate(etc)
    (absent / "sub").mkdir(parents=True)
    mutated = local_ansible.module("mh_ansible.rollback.host_state", state_args)
    assert mutated["state"]["paths"] != before["state"]["paths"]
    assert mutated["state"]["users"] == before["state"]["users"]

    dry, after_dry, done, after, again, final, missing = local_ansible.playbook(
        [
            {**restore, "check_mode": True, "diff": True},
            {"mh_ansible.rollback.host_state": state_args},
            {**restore, "diff": True},
            {"mh_ansible.rollback.host_state": state_args},
            restore,
            {"mh_ansible.rollback.restore": {"name": "t1", "backup_dir": str(backup)}},
            {"mh_ansible.rollback.restore": {"name": "t1", "backup_dir": str(backup)}, "ignore_errors": True},
        ]
    )
    # check mode: reports, changes nothing, keeps the snapshot
    assert dry.changed
    assert after_dry["state"] == mutated["state"]
    assert dry["restored"] == done["restored"]
    assert dry["diff"] == done["diff"]

    restored = {(entry["path"], entry["action"]): entry["changes"] for entry in done["restored"]}
    assert restored[(str(etc / "app.conf"), "updated")][0] == "content changed"
    assert "mode 0755 -> 4755" in restored[(str(etc / "suid"), "updated")]
    assert "mode 0755 -> 0700" in restored[(str(etc / "private"), "updated")]
    assert (str(etc / "private" / "key"), "created") in restored
    assert (str(etc / "created.conf"), "removed") in restored
    assert (str(etc / "new"), "removed") in restored
    assert (str(etc / "becomes_dir"), "removed") in restored
    assert (str(etc / "becomes_dir"), "created") in restored
    assert (str(etc / "becomes_file" / "inner"), "created") in restored
    assert restored[(str(etc / "link"), "updated")][0] == "target binary -> app.conf"
    assert (str(etc / "dangling"), "created") in restored
    assert (str(etc / "fifo"), "created") in restored
    assert (str(absent), "removed") in restored
    if IS_ROOT:
        assert "owner 65534 -> 0" in restored[(str(etc / "app.conf"), "updated")]
        assert f"owner 0 -> {NOBODY}" in restored[(str(etc / "conf.d" / "a.conf"), "updated")]
        assert "group 65534 -> 0" in restored[(str(etc / "link"), "updated")]

    diffs = {entry["before_header"].split(" (")[0]: entry for entry in done["diff"]}
    assert diffs[str(etc / "app.conf")]["before"] == "port = 8080\n"
    assert diffs[str(etc / "app.conf")]["after"] == "port = 80\n"
    assert diffs[str(etc / "suid")] == {
        "before_header": str(etc / "suid"),
        "after_header": str(etc / "suid"),
        "before": "mode 0755\n",
        "after": "mode 4755\n",
    }
    assert diffs[str(etc / "created.conf")]["after"] == "absent\n"

    # after the restore the fingerprint is the one from before; the excluded file keeps its change
    assert after["state"] == before["state"]
    assert (etc / "app.log").read_text() == "log line 2\n"
    assert stat.S_ISFIFO((etc / "fifo").lstat().st_mode)
    assert stat.S_IMODE((etc / "suid").stat().st_mode) == 0o4755

    # idempotent, then removed on request, then missing
    assert not again.changed
    assert again["restored"] == []
    assert not final.changed
    assert final["snapshot_removed"]
    assert not (backup / "t1").exists()
    assert missing.failed
    assert missing["msg"] == f"snapshot 't1' not found in backup_dir {str(backup)!r}"


def test_snapshot__check_mode_replacement_subsets_bad_input_and_role(
    tmp_path: Path, local_ansible: LocalAnsible
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "one").write_text("1\n")
    (tree / "two").write_text("2\n")
    backup = tmp_path / "backup"
    one, two = str(tree / "one"), str(tree / "two")

    def snap(paths: list[str], **extra: Any) -> dict[str, Any]:
        return {"mh_ansible.rollback.snapshot": {"name": "s", "backup_dir": str(backup), "paths": paths}, **extra}

    def restore(**args: Any) -> dict[str, Any]:
        return {"mh_ansible.rollback.restore": {"name": "s", "backup_dir": str(backup), **args}, "ignore_errors": True}

    results = local_ansible.playbook(
        [
            snap([one], check_mode=True),
            {"ansible.builtin.stat": {"path": str(backup)}},
            snap([one]),
            snap([one, two]),
            {"ansible.builtin.copy": {"dest": one, "content": "changed 1\n"}},
            {"ansible.builtin.copy": {"dest": two, "content": "changed 2\n"}},
            restore(paths=[two]),
            restore(paths=[str(tree / "never")]),
            snap(["relative/path"], ignore_errors=True),
            {
                "mh_ansible.rollback.snapshot": {"name": "../escape", "paths": [one], "backup_dir": str(backup)},
                "ignore_errors": True,
            },
            {
                "ansible.builtin.include_role": {"name": "mh_ansible.rollback.snapshot_paths"},
                "vars": {
                    "snapshot_paths_list": [str(tree)],
                    "snapshot_paths_name": "from-role",
                    "snapshot_paths_backup_dir": str(backup),
                },
            },
        ]
    )
    dry, backup_stat, first, replaced, _, _, subset, unknown, relative, bad_name, *role = results
    assert dry.changed
    assert dry["bytes"] == 0
    assert not backup_stat["stat"]["exists"]
    assert first.changed
    assert list(replaced["paths"]) == [one, two]
    assert [entry["path"] for entry in subset["restored"]] == [two]
    assert not subset["snapshot_removed"], "a partial restore keeps the snapshot"
    assert (tree / "two").read_text() == "2\n"
    assert (tree / "one").read_text() == "changed 1\n"
    assert unknown.failed
    assert repr(str(tree / "never")) in unknown["msg"]
    assert relative.failed
    assert "'relative/path' is not absolute" in relative["msg"]
    assert bad_name.failed
    assert "snapshot name '../escape'" in bad_name["msg"]
    assert [result.status for result in role] == ["ok"] * len(role)
    assert role[-1]["paths"][str(tree)]["entries"] == 3
    assert (backup / "from-role" / "manifest.json").is_file()


def test_host_state__whole_host_fingerprint(local_ansible: LocalAnsible) -> None:
    result = local_ansible.module("mh_ansible.rollback.host_state", {"paths": ["/etc/hostname", "/nonexistent"]})
    assert not result.changed
    state = result["state"]
    assert state["paths"]["/nonexistent"] == {"type": "absent"}
    assert state["paths"]["/etc/hostname"]["type"] == "file"
    assert len(state["paths"]["/etc/hostname"]["sha256"]) == 64
    assert state["users"]["root"]["uid"] == 0
    assert state["groups"]["root"]["gid"] == 0
    if os.path.exists("/usr/bin/dpkg-query"):
        assert "dpkg" in state["packages"]
    assert result["service_manager"] in {"systemd", "sysv", "none"}


def test_integration_target__runs_green(local_ansible: LocalAnsible) -> None:
    target = COLLECTION / "tests" / "integration" / "targets" / "snapshot_restore" / "tasks" / "main.yml"
    results = local_ansible.playbook([{"ansible.builtin.include_tasks": str(target)}])
    failed = [(result.task, result.raw.get("msg")) for result in results if result.failed and not result.ignored]
    assert failed == []
    assert len(results) > 10


def test_collection__builds_and_documents(tmp_path: Path, local_ansible: LocalAnsible) -> None:
    local_ansible.command("ansible-galaxy", "collection", "build", str(COLLECTION), "--output-path", str(tmp_path))
    assert (tmp_path / "mh_ansible-rollback-0.1.0.tar.gz").is_file()
    modules = [f"mh_ansible.rollback.{name}" for name in ("snapshot", "restore", "host_state")]
    doc = local_ansible.command("ansible-doc", "-t", "module", *modules)
    for module in modules:
        assert f"MODULE {module}" in doc.stdout
    assert "EXAMPLES:" in doc.stdout
    assert "RETURN VALUES:" in doc.stdout
    assert "[WARNING]" not in doc.stderr
