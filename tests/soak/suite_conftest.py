"""The generated soak suite's conftest (the driver copies it as ``conftest.py`` next to ``test_soak.py``).

It carries out the plan (``plan.json``): each test's changes, through the bundled utilities and raw
module calls, and its fault. It writes what happened as JSON lines (``events.jsonl``) for the
driver: each test's start, each change, each fault as observed from inside the test, and each
report (outcome, a drift report of ``--mh-verify-rollback``, "NOT reverted" lines of the rollback).
``run.json`` (rewritten by the driver before each pytest run) lists the tests still to run; the
others are deselected, which is how a run resumes after a signal.
"""

from __future__ import annotations

import json
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_mh_ansible import ModuleError, MultihostRole, ProcessTimeoutError
from pytest_mh_ansible.lab import Lab

HERE = Path(__file__).parent
PLAN: dict[str, Any] = json.loads((HERE / "plan.json").read_text())
RUN: dict[str, Any] = json.loads((HERE / "run.json").read_text())
TESTS: list[dict[str, Any]] = PLAN["tests"]
SIGNALS = ("sigint", "sigterm", "sighup")
FILL = "/tmp/mhsoak-fill"
# The objects in unusual states (tests/soak/states.py, made by the driver before the first fingerprint).
D = "/srv/mhsoak"


def event(**data: Any) -> None:
    with open(RUN["events"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"at": time.time(), **data}) + "\n")


def _index(nodeid: str) -> int | None:
    name = nodeid.rpartition("::")[2].partition("[")[0]
    return int(name[5:]) if name.startswith("test_") and name[5:].isdigit() else None


def _lab() -> Lab:
    return Lab.from_directory(PLAN["lab_dir"])


# -- the changes --------------------------------------------------------------------------------------
def apply(role: MultihostRole[Any], change: dict[str, Any]) -> bool:
    """Make one planned change; True when the host changed."""
    kind, a, host = change["kind"], change["args"], role.host
    if kind == "fs.write":
        return role.fs.write(a["path"], a["content"], mode=a["mode"], dedent=False)
    if kind == "fs.append":
        return role.fs.append(a["path"], a["line"] + "\n", dedent=False)
    if kind == "fs.mkdir_touch":
        role.fs.mkdir_p(a["path"], mode=a["mode"])
        return role.fs.touch(a["path"] + "/f")
    if kind == "fs.chmod_chown":
        role.fs.chmod(a["mode"], a["path"])
        return role.fs.chown(a["path"], user="labuser", group="labuser")
    if kind == "fs.rm":
        return role.fs.rm(a["path"])
    if kind == "users.add":
        return role.users.add(a["name"], shell=a["shell"], groups=["users"])
    if kind == "users.group_member":
        role.users.add_group(a["name"], gid=a["gid"])
        return role.users.add_member(a["name"], "labuser")
    if kind == "users.modify":
        return role.users.modify("labuser", comment=a["comment"], shell=a["shell"])
    if kind.startswith("svc."):
        return bool(getattr(role.svc, kind[4:])(a["name"]))
    if kind == "sysctl.set":
        key = a["key"]
        modulo = 3 if key.endswith("rp_filter") else 2
        return role.sysctl.set(key, (int(role.sysctl.get(key)) + 1) % modulo)
    if kind == "config.ini":
        return role.config_files.ini(a["path"], a["section"], a["option"], a["value"])
    if kind == "config.line":
        return role.config_files.line(a["path"], a["line"])
    if kind == "config.block":
        return role.config_files.block(a["path"], a["block"], marker=f"# {{mark}} MHSOAK {a['tag']}")
    if kind == "firewall.reject_port":
        direction = role.firewall.inbound if a["inbound"] else role.firewall.outbound
        direction.reject_port(a["port"])
        return True
    if kind == "firewall.reject_host":
        role.firewall.outbound.reject_host(a["target"])
        return True
    if kind == "tc.limit_rate":  # (netem, for delays and loss, is not in every kernel: htb is)
        role.tc.limit_rate(a["target"], a["rate"])
        return True
    if kind == "pkg.install":
        return role.pkg.install(a["name"])
    if kind.startswith("state."):
        return apply_state(role, kind, a)
    if kind == "module.copy":
        return (
            host.ansible.run("ansible.builtin.copy", dest=a["dest"], content=a["content"], mode=a["mode"]).changed
            is True
        )
    if kind == "module.lineinfile":
        return (
            host.ansible.run("ansible.builtin.lineinfile", path=a["path"], line=a["line"], create=True).changed is True
        )
    if kind == "module.blockinfile":
        marker = f"# {{mark}} MHSOAK MODULE {a['tag']}"
        return (
            host.ansible.run(
                "ansible.builtin.blockinfile", path=a["path"], block=a["block"], marker=marker, create=True
            ).changed
            is True
        )
    if kind == "module.file":
        extra = {"src": "/etc/hostname"} if a["state"] == "link" else {}
        made = host.ansible.run("ansible.builtin.file", path=a["path"], state=a["state"], **extra).changed is True
        removed = host.ansible.run("ansible.builtin.file", path=a["remove"], state="absent").changed is True
        return made or removed
    if kind == "module.user":
        return (
            host.ansible.run("ansible.builtin.user", name=a["name"], shell=a["shell"], state="present").changed is True
        )
    if kind == "module.group":
        return host.ansible.run("ansible.builtin.group", name=a["name"], gid=a["gid"], state="present").changed is True
    if kind == "module.service":
        return (
            host.ansible.run("ansible.builtin.service", name=a["name"], state="started", enabled=True).changed is True
        )
    raise AssertionError(f"mhsoak: unknown change kind {kind!r}")


def _fails(call: Any, *args: Any, **kwargs: Any) -> bool:
    """A module call that must fail (the object refuses it); False: the host did not change."""
    try:
        call(*args, **kwargs)
    except ModuleError:
        return False
    raise AssertionError(f"mhsoak: {args[0]} {kwargs} was expected to fail, and it did not")


def apply_state(role: MultihostRole[Any], kind: str, a: dict[str, Any]) -> bool:
    """Change one pre-existing object in an unusual state, with a module call or a utility (``a["via"]``)."""
    run, utility = role.host.ansible.run, a["via"] == "utility"
    if kind == "state.user_noshadow":  # the #32 case: its rollback once deleted the user and its home
        if utility:
            return role.users.modify("mhslegacy", comment=a["comment"])
        return run("ansible.builtin.user", name="mhslegacy", comment=a["comment"]).changed is True
    if kind == "state.user_locked":
        if utility:
            return role.users.modify("mhslocked", shell="/bin/sh")
        return run("ansible.builtin.user", name="mhslocked", shell="/bin/sh", password_lock=False).changed is True
    if kind == "state.group_noshadow":
        return run("ansible.builtin.group", name="mhsnoshadow", gid=a["gid"]).changed is True
    if kind in ("state.file_acl", "state.file_xattr", "state.hardlink"):
        path = {"state.file_acl": f"{D}/acl.conf", "state.file_xattr": f"{D}/xattr.conf"}.get(kind, f"{D}/a.conf")
        if utility:
            return role.fs.write(path, "changed by the soak\n", dedent=False)
        return run("ansible.builtin.copy", dest=path, content="changed by the soak\n").changed is True
    if kind == "state.fifo":
        if utility:
            return role.fs.rm(f"{D}/fifo")
        return run("ansible.builtin.file", path=f"{D}/fifo", state="absent").changed is True
    if kind == "state.symlink":
        if utility:
            removed = role.fs.rm(f"{D}/link.conf")
            return role.fs.append(f"{D}/target.conf", "more\n", dedent=False) or removed
        removed = run("ansible.builtin.file", path=f"{D}/link.conf", state="absent").changed is True
        return run("ansible.builtin.lineinfile", path=f"{D}/target.conf", line="more").changed is True or removed
    if kind == "state.setuid_caps":
        if utility:
            changed = role.fs.chmod("0755", f"{D}/suid.bin")
        else:
            changed = run("ansible.builtin.file", path=f"{D}/suid.bin", mode="0755").changed is True
        replaced = run("ansible.builtin.copy", dest=f"{D}/cap.bin", src="/bin/false", remote_src=True).changed
        return changed or replaced is True
    if kind == "state.noname_owner":
        if utility:
            return role.fs.append(f"{D}/noname.conf", "more\n", dedent=False)
        return run("ansible.builtin.lineinfile", path=f"{D}/noname.conf", line="more").changed is True
    if kind == "state.immutable":
        return _fails(run, "ansible.builtin.copy", dest=f"{D}/immutable.conf", content="changed\n")
    if kind == "state.sysctl_missing":  # a key read-only on a lab host (the machine's kernel), one that does not exist
        _fails(run, "ansible.posix.sysctl", name="kernel.pid_max", value="65536", sysctl_set=True)
        return _fails(run, "ansible.posix.sysctl", name="net.ipv4.no_such_key", value="1", sysctl_set=True)
    if kind == "state.service":
        return _service_state(role, a)
    if kind == "state.held_pkg":
        return (
            run("ansible.builtin.apt", name="cowsay", state="absent", allow_change_held_packages=True).changed is True
        )
    raise AssertionError(f"mhsoak: unknown state change {kind!r}")


def _service_state(role: MultihostRole[Any], a: dict[str, Any]) -> bool:
    run, utility = role.host.ansible.run, a["via"] == "utility"
    if PLAN["hosts"][role.host.name] != "systemd":  # a sysv service disabled by K links only
        if utility:
            return role.svc.enable("mhsoak-k") | role.svc.start("mhsoak-k")
        return run("ansible.builtin.service", name="mhsoak-k", state="started", enabled=True).changed is True
    if a["variant"] == "unmask":
        return run("ansible.builtin.systemd_service", name="mhsoak-masked", masked=False).changed is True
    if a["variant"] == "static":
        if utility:
            return role.svc.start("mhsoak-static")
        return run("ansible.builtin.systemd_service", name="mhsoak-static", state="started").changed is True
    content = "[Service]\nEnvironment=MH=2\n"
    if utility:
        changed = role.fs.write("/etc/systemd/system/mhsoak-drop.service.d/override.conf", content, dedent=False)
    else:
        dest = "/etc/systemd/system/mhsoak-drop.service.d/override.conf"
        changed = run("ansible.builtin.copy", dest=dest, content=content).changed is True
    run("ansible.builtin.systemd_service", name="mhsoak-drop", state="restarted", daemon_reload=True)
    return changed


def apply_all(index: int, role: MultihostRole[Any], changes: list[dict[str, Any]]) -> None:
    for change in changes:
        changed = apply(role, change)
        event(kind="change", index=index, change=change["kind"], changed=changed)


def write(path: str) -> dict[str, Any]:
    """A change that writes a small file (made after a fault, to see that the host still takes changes)."""
    return {"kind": "fs.write", "args": {"path": path, "content": "after a fault\n", "mode": "0600"}}


# -- the faults ---------------------------------------------------------------------------------------
def restart_sshd(test: dict[str, Any]) -> None:
    """Kill every sshd of the host (the listener and each session, so the controller's too), start it again."""
    lab, host = _lab(), test["host"]
    before = lab.run_inside(host, "pgrep -o -x sshd").stdout.strip()
    if PLAN["hosts"][host] == "systemd":
        command = "pkill -KILL -x sshd; sleep 0.3; systemctl reset-failed ssh.service; systemctl restart ssh.service"
    else:
        command = "pkill -KILL -x sshd; sleep 0.3; /usr/sbin/sshd"
    done = lab.run_inside(host, command)
    after = lab.run_inside(host, "pgrep -o -x sshd").stdout.strip()
    observed = done.returncode == 0 and bool(after) and after != before
    event(
        kind="fault", index=test["index"], fault="sshd_restart", observed=observed, detail=f"sshd {before} -> {after}"
    )
    assert observed, f"sshd was not restarted: {done.stderr} ({before} -> {after})"


def fill_tmp(test: dict[str, Any]) -> str:
    """Shrink the host's /tmp (its own tmpfs) to what it holds plus 2 MB, then fill it; returns the probe's error."""
    script = (
        "used=$(df -k --output=used /tmp | tail -1); mount -o remount,size=$((used + 2048))k /tmp || exit 1; "
        f"dd if=/dev/zero of={FILL} bs=64k >/dev/null 2>&1; dd if=/dev/zero of=/tmp/mhsoak-probe bs=1k count=4"
    )
    return _lab().run_inside(test["host"], script).stderr


def free_tmp(test: dict[str, Any]) -> None:
    _lab().run_inside(test["host"], f"rm -f {FILL} /tmp/mhsoak-probe; mount -o remount,size=50% /tmp")


class Soak:
    """What a generated test calls: ``soak.body(index, target)``."""

    def body(self, index: int, role: MultihostRole[Any]) -> None:
        test = TESTS[index]
        fault, changes = test["fault"], test["changes"]
        if fault == "sshd_restart":
            half = max(1, len(changes) // 2)
            apply_all(index, role, changes[:half])
            restart_sshd(test)
            apply_all(index, role, changes[half:])
            return
        if fault != "timeout_test":  # its changes were made in setup, outside the mh_timeout
            apply_all(index, role, changes)
        if fault == "fail_body":
            raise AssertionError(f"mhsoak: scheduled failure of {test['name']}")
        if fault in SIGNALS:
            event(kind="signal_ready", index=index, fault=fault)
            Path(RUN["ready"]).write_text(str(index))
            time.sleep(300)
            raise AssertionError(f"mhsoak: {fault} was scheduled but never came")
        if fault == "timeout_call":
            started = time.monotonic()
            with pytest.raises(ProcessTimeoutError) as caught:
                role.host.conn.run("sleep 30", timeout=1)
            took = time.monotonic() - started
            event(
                kind="fault",
                index=index,
                fault=fault,
                observed=took < 15,
                detail=f"{caught.value!s:.200} ({took:.1f} s)",
            )
            apply(
                role,
                {"kind": "fs.write", "args": {"path": "/etc/mhsoak-after-timeout", "content": "x\n", "mode": "0600"}},
            )
        elif fault == "timeout_test":
            role.host.conn.run("sleep 60")
            raise AssertionError("mhsoak: mh_timeout never fired")
        elif fault == "full_tmp":
            error = fill_tmp(test)
            observed = "No space left on device" in error
            try:  # a change with /tmp full: it may fail, but what it did must still be rolled back
                apply(
                    role,
                    {"kind": "fs.write", "args": {"path": "/etc/mhsoak-tmpfull", "content": "y\n", "mode": "0600"}},
                )
                after = "the change with /tmp full succeeded"
            except Exception as exc:
                after = f"the change with /tmp full failed: {type(exc).__name__}: {exc!s:.300}"
            event(kind="fault", index=index, fault=fault, observed=observed, detail=f"{error.strip()!s:.200}; {after}")


@pytest.fixture
def soak(request: pytest.FixtureRequest) -> Soak:
    return Soak()


@pytest.fixture(autouse=True)
def _soak_setup_fault(request: pytest.FixtureRequest) -> None:
    """Changes made in setup: a failing setup's (it errors after them: the body never runs), and those of
    a test that meets its mh_timeout (the timer covers the call phase only: its short limit must time the
    fault, not the changes, which take longer on a loaded machine; CI once cut two of them off)."""
    index = _index(request.node.nodeid)
    if index is None or TESTS[index]["fault"] not in ("fail_setup", "timeout_test"):
        return
    role = request.getfixturevalue("target")
    apply_all(index, role, TESTS[index]["changes"])
    if TESTS[index]["fault"] == "fail_setup":
        raise RuntimeError(f"mhsoak: scheduled setup failure of {TESTS[index]['name']}")


# -- selection and reporting ------------------------------------------------------------------------
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    todo = set(RUN["todo"])
    keep = [item for item in items if _index(item.nodeid) in todo]
    dropped = [item for item in items if _index(item.nodeid) not in todo]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    event(kind="start", index=_index(nodeid), nodeid=nodeid)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    text = report.longreprtext if report.longrepr is not None else ""
    rollback = "\n".join(content for title, content in report.sections if "rollback" in title)
    event(
        kind="report",
        index=_index(report.nodeid),
        when=report.when,
        outcome=report.outcome,
        longrepr=text[-3000:],
        drift="drift not rolled back" in text,
        drift_text=text[text.find("the hosts differ") :][:2000] if "drift not rolled back" in text else "",
        not_reverted=[line for line in rollback.splitlines() if "NOT reverted" in line],
        duration=report.duration,
    )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """After everything of the test's teardown (its rollback and drift check too): free a filled /tmp."""
    try:
        return (yield)
    finally:
        index = _index(item.nodeid)
        if index is not None and TESTS[index]["fault"] == "full_tmp":
            free_tmp(TESTS[index])
