"""The before-state of users and groups: decided from getent's positive answers only, run by the system's shell.

The probes run for real on this machine's bash; a stand-in ``getent`` (first on PATH) answers as an
NSS source that fails, or serves an account that is not in the local files, would.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_mh_ansible import ModuleResult
from pytest_mh_ansible._private.rollback import accounts


@dataclass
class _Out:
    stdout: str
    rc: int


@dataclass
class _LocalConn:
    """Runs each command with this machine's bash, ``bin`` first on PATH; records the commands."""

    bin: Path | None = None
    commands: list[str] = field(default_factory=list)
    fail: dict[str, int] = field(default_factory=dict)  # a command containing the key exits with the value

    def run(self, command: str, raise_on_error: bool = True, **kwargs: Any) -> _Out:
        self.commands.append(command)
        for key, rc in self.fail.items():
            if key in command:
                return _Out("", rc)
        env = dict(os.environ)
        if self.bin is not None:
            env["PATH"] = f"{self.bin}:{env['PATH']}"
            command = command.replace("PATH=$PATH:", f"PATH={self.bin}:$PATH:")
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, check=False)
        if raise_on_error and done.returncode != 0:
            raise AssertionError(f"{command!r} exited {done.returncode}: {done.stderr}")
        return _Out(done.stdout, done.returncode)


@dataclass
class _Modules:
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def run(self, module: str, args: Any = None, **kwargs: Any) -> ModuleResult:
        self.calls.append((module, {**(args or {}), **kwargs}))
        return ModuleResult.from_raw("server1", module, {"changed": True})


@dataclass
class _Host:
    conn: _LocalConn
    name: str = "server1"
    ansible: _Modules = field(default_factory=_Modules)


def _stand_in(bin_dir: Path, tool: str, body: str) -> None:
    """``bin_dir/tool``: ``body`` is a bash case over "$1 $2"; anything else goes to the real tool."""
    bin_dir.mkdir(exist_ok=True)
    real = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True, text=True, check=True).stdout
    script = bin_dir / tool
    script.write_text(f'#!/bin/bash\ncase "$1 $2" in\n{body}\n*) exec {real.strip()} "$@";;\nesac\n')
    script.chmod(0o755)


def _getent(tmp_path: Path, body: str, *, served: str = "") -> Path:
    """A stand-in getent answering by ``body``; ``served`` names a user whom ``id`` then resolves too
    (as an NSS source would serve it: primary group root)."""
    bin_dir = tmp_path / "bin"
    _stand_in(bin_dir, "getent", body)
    if served:
        _stand_in(bin_dir, "id", f"'-gn {served}'|'-Gn {served}') echo root;;")
    return bin_dir


def test_probe_user__an_existing_local_user__found_with_its_entries() -> None:
    host: Any = _Host(_LocalConn())
    state = accounts.probe_user(host, "root", home=None)
    assert state.found
    assert state.local
    assert state.unreadable is None
    assert state.fields[0] == "root"
    assert state.fields[2] == "0"
    assert state.primary == "root"
    assert "root" in state.groups
    if os.geteuid() == 0:
        assert state.shadow is not None
        assert state.shadow[0] == "root"


def test_probe_user__no_such_user__absent_from_getents_own_answer() -> None:
    host: Any = _Host(_LocalConn())
    state = accounts.probe_user(host, "mh-no-such-user-x1", home=None)
    assert not state.found
    assert state.unreadable is None
    assert state.home.endswith("/mh-no-such-user-x1")
    assert not state.home_existed
    assert state.group is not None
    assert not state.group.found


@pytest.mark.parametrize("rc", [1, 3, 127], ids=["database-unavailable", "no-enumeration", "no-getent"])
def test_probe_user__getent_fails__unreadable_and_the_change_is_never_deleted(tmp_path: Path, rc: int) -> None:
    """A failed probe is never taken for "no such user": the inverse refuses, nothing is deleted."""
    bin_dir = _getent(tmp_path, f"'passwd legacy') exit {rc};;")
    host: Any = _Host(_LocalConn(bin_dir))
    state = accounts.probe_user(host, "legacy", home=None)
    assert not state.found
    assert state.unreadable is not None
    assert "getent passwd exited" in state.unreadable
    undo, why = accounts.user_inverse(host, state, {"name": "legacy", "comment": "changed"})
    assert undo is None
    assert why is not None
    assert "not revertible" in why
    assert "'legacy'" in why


def test_probe_user__a_user_with_no_shadow_entry__restored_without_a_password(tmp_path: Path) -> None:
    """The reported case: an account with no shadow entry was taken for one the test created."""
    bin_dir = _getent(
        tmp_path,
        "'passwd legacy') echo 'legacy:x:0:0:original:/home/legacy:/bin/sh';;\n'shadow legacy') exit 2;;",
        served="legacy",
    )
    conn = _LocalConn(bin_dir)
    host: Any = _Host(conn)
    # /etc/passwd has no 'legacy': the probe says so (local=False); the inverse of a local one is checked here
    state = accounts.probe_user(host, "legacy", home=None)
    assert state.found
    assert state.shadow is None
    assert not state.local
    local = accounts.UserState(**{**state.__dict__, "local": True})
    undo, why = accounts.user_inverse(host, local, {"name": "legacy", "comment": "changed"})
    assert why is None
    assert undo is not None
    conn.fail = {"getent shadow": 2}
    undo()
    assert host.ansible.calls[-1][0] == "ansible.builtin.user"
    restored = host.ansible.calls[-1][1]
    assert restored["comment"] == "original"
    assert restored["home"] == "/home/legacy"
    assert "password" not in restored
    assert not any("userdel" in command for command in conn.commands)


def test_user_inverse__an_account_served_by_nss_only__not_reverted_never_created_nor_deleted(tmp_path: Path) -> None:
    bin_dir = _getent(
        tmp_path, "'passwd ldapuser') echo 'ldapuser:*:0:0:LDAP:/home/ldapuser:/bin/sh';;", served="ldapuser"
    )
    conn = _LocalConn(bin_dir)
    host: Any = _Host(conn)
    state = accounts.probe_user(host, "ldapuser", home=None)
    assert state.found
    assert not state.local
    undo, why = accounts.user_inverse(host, state, {"name": "ldapuser", "shell": "/bin/false"})
    assert undo is None
    assert why is not None
    assert "NSS only" in why


def test_user_inverse__created_user_whose_home_existed__home_kept(tmp_path: Path) -> None:
    home = tmp_path / "home-of-new"
    home.mkdir()
    (home / "data.txt").write_text("keep\n")
    conn = _LocalConn()
    host: Any = _Host(conn)
    state = accounts.probe_user(host, "mh-no-such-user-x2", home=str(home))
    assert not state.found
    assert state.home_existed
    assert state.home == str(home)
    undo, _ = accounts.user_inverse(host, state, {"name": "mh-no-such-user-x2", "home": str(home)})
    assert undo is not None
    conn.fail = {"userdel": 0}
    undo()
    deletions = [c for c in conn.commands if "userdel" in c]
    assert deletions == ["PATH=$PATH:/usr/sbin:/sbin; userdel --force mh-no-such-user-x2"]
    assert (home / "data.txt").read_text() == "keep\n"


def test_user_inverse__created_user_with_a_group_of_its_name_that_existed__group_kept(tmp_path: Path) -> None:
    bin_dir = _getent(tmp_path, "'group newbie') echo 'newbie:x:4242:ann,bob';;")
    conn = _LocalConn(bin_dir)
    host: Any = _Host(conn)
    state = accounts.probe_user(host, "newbie", home=None)
    assert not state.found
    assert state.group is not None
    assert state.group.found
    assert state.group.gid == 4242
    undo, _ = accounts.user_inverse(host, state, {"name": "newbie"})
    assert undo is not None
    # userdel took the group along (USERGROUPS_ENAB): it is put back with its gid and members
    conn.fail = {"userdel": 0, "getent group newbie": 2, "groupadd": 0, "gpasswd": 0}
    undo()
    assert "PATH=$PATH:/usr/sbin:/sbin; userdel --remove newbie" in conn.commands
    assert "PATH=$PATH:/usr/sbin:/sbin; groupadd -g 4242 newbie" in conn.commands
    assert any("gpasswd -M ann,bob newbie" in c for c in conn.commands)


@pytest.mark.parametrize("rc", [1, 127])
def test_group_inverse__probe_fails__not_revertible(tmp_path: Path, rc: int) -> None:
    bin_dir = _getent(tmp_path, f"'group staff2') exit {rc};;")
    host: Any = _Host(_LocalConn(bin_dir))
    undo, why = accounts.group_inverse(host, accounts.probe_group(host, "staff2"), {})
    assert undo is None
    assert why is not None
    assert "not revertible" in why


def test_group_inverse__no_such_group__deleted_on_undo() -> None:
    conn = _LocalConn()
    host: Any = _Host(conn)
    state = accounts.probe_group(host, "mh-no-such-group-x3")
    assert not state.found
    assert state.unreadable is None
    undo, why = accounts.group_inverse(host, state, {})
    assert undo is not None
    assert why is None
    conn.fail = {"groupdel": 0}
    undo()
    assert conn.commands[-1] == "PATH=$PATH:/usr/sbin:/sbin; groupdel mh-no-such-group-x3"


def test_states__back_from_a_hosts_journal_as_they_were() -> None:
    """A dead session's journal keeps the states as JSON; the recovery makes the same states of them."""
    import dataclasses
    import json

    host: Any = _Host(_LocalConn())
    for state in (accounts.probe_user(host, "root", home=None), accounts.probe_user(host, "mh-no-such-x4", home=None)):
        kept = json.loads(json.dumps(dataclasses.asdict(state)))
        assert accounts.UserState.from_dict(kept) == state
    group = accounts.probe_group(host, "root")
    assert accounts.GroupState.from_dict(json.loads(json.dumps(dataclasses.asdict(group)))) == group


def test_states__back_from_the_probes_own_output_as_a_hosts_journal_keeps_it() -> None:
    """The entry written with the probe keeps its output (base64): the same parser gives the same state."""
    import base64

    conn = _LocalConn()
    host: Any = _Host(conn)
    for name, home in (("root", None), ("mh-no-such-x5", "/srv/mh-x5")):
        output = conn.run(accounts.user_probe(name, home=home)).stdout
        kept = {"name": name, "home_arg": home, "probe": base64.b64encode(output.encode()).decode()}
        assert accounts.UserState.from_dict(kept) == accounts.probe_user(host, name, home=home)
    output = conn.run(accounts.group_probe("root")).stdout
    group = accounts.GroupState.from_dict({"name": "root", "probe": base64.b64encode(output.encode()).decode()})
    assert group == accounts.probe_group(host, "root")
    assert group.found


@pytest.mark.parametrize("probe", ["", "not base64!", "cGFzc3dkCTEK"], ids=["empty", "garbled", "cut-short"])
def test_states__a_probe_output_that_cannot_be_read__unreadable_never_absent(probe: str) -> None:
    """A journal entry whose probe output is damaged never makes "there was no such account" (so no deletion)."""
    user = accounts.UserState.from_dict({"name": "alice", "home_arg": None, "probe": probe})
    assert user.unreadable is not None
    group = accounts.GroupState.from_dict({"name": "staff", "probe": probe})
    assert group.unreadable is not None
    host: Any = _Host(_LocalConn())
    assert accounts.user_inverse(host, user, {})[0] is None
    assert accounts.group_inverse(host, group, {})[0] is None
