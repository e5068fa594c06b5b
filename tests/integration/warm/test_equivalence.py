"""The warm executor gives the very results of the standard one: the same calls, compared field by field.

Every case runs three times on the same, freshly reset state of server1:

* ``A``: through ``standard`` (a :class:`StandardExecutor`),
* ``B``: through ``standard_again`` (a second, independent :class:`StandardExecutor`),
* ``W``: through ``warm`` (the :class:`WarmExecutor` under test).

``A`` against ``B`` shows what differs between two standard runs anyway; only such fields are
normalized (see ``NORMALIZERS``; ``test_normalizer_is_needed`` proves each of them needed) and
everything else of ``W`` must equal ``A``: keys, values and their types, ``changed``, ``failed``,
``msg``, ``rc``, ``diff``, ``warnings``, ``deprecations``.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_mh_ansible._private.ansible import warm as warm_module
from pytest_mh_ansible._private.ansible.executor import StandardExecutor
from pytest_mh_ansible._private.ansible.inventory import Inventory
from pytest_mh_ansible._private.ansible.warm import WarmExecutor
from pytest_mh_ansible.lab import dummy_init_script

pytestmark = pytest.mark.integration

BASE = "/tmp/mhwarm-eq"
DUMMY_SERVICE = "mhwarmdummy"
DUMMY_SCRIPT = dummy_init_script(DUMMY_SERVICE, "dummy service of the warm equivalence tests")
TEMPLATE = "host={{ inventory_hostname }}\naddress={{ ansible_host }}\nitems={{ [3, 1, 2] | sort | join(',') }}\n"

# Reading a file right after writing it moves its atime (relatime: atime <= mtime/ctime); after
# a pause, one read settles it, so that the three runs of a read-only case see the same stat.
SETTLE = "sleep 0.05; find $W -type f -exec cat {} + >/dev/null"


# --- the cases ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One module call, and the state of server1 it starts from.

    ``{w}`` in the arguments is the case's own directory on server1 (``$W`` in ``setup``),
    ``{t}`` the controller directory holding ``motd.j2`` and ``frags/``, ``{l}`` the case's own
    controller directory (emptied before each run: where ``fetch`` writes).
    """

    id: str
    module: str
    args: dict[str, Any] = field(default_factory=dict)
    setup: str = ""
    teardown: str = ""
    # Run after ``setup``, with the case's Runner: for state that only a module call can make.
    prepare: Callable[[Runner], None] | None = None
    read_only: bool = False  # the call changes nothing: set up once, not before each run
    check: bool = False
    diff: bool = False
    become: bool | None = None
    become_user: str | None = None
    no_log: bool = False
    host: str = "server1"
    # Guards that the case tests what it says: the call fails or not, and these keys are in its result.
    failed: bool = False
    shows: tuple[str, ...] = ()
    expect: dict[str, Any] = field(default_factory=dict)  # and these values
    payload: bool = True  # False: the call has no module payload (nothing for the agent)
    xfail: str | None = None  # a known difference of the warm executor (strict: fixing it flags the marker)
    # Compare the files the call leaves too: each file's type, mode, owner, group and content, on
    # server1 (under {w}) and on the controller (under {l}).
    observe: bool = False


def _snapshot_then_change(runner: Runner) -> None:
    """Snapshot $W/data (through the standard executor), then change it: a restore has something to do."""
    args = {"name": "eq", "paths": [f"{runner.workdir}/data"], "backup_dir": f"{runner.workdir}/snaps"}
    result = runner.standard.run("server1", "mh_ansible.rollback.snapshot", args, **_CALL)
    assert not result.get("failed"), result
    runner.on_host(f"W={runner.workdir}\n{_CHANGE_DATA}")


_CALL: dict[str, Any] = dict(check=False, diff=False, become=None, become_user=None, no_log=False, template=False)
_DATA = "mkdir -p $W/data/sub; printf 'one\\n' > $W/data/a.conf; printf 'two\\n' > $W/data/sub/b.txt"
_CHANGE_DATA = "printf 'changed\\n' > $W/data/a.conf; chmod 0600 $W/data/sub/b.txt; printf 'new\\n' > $W/data/new.txt"
_COMMAND_ENV = 'env | sort; pwd; umask; ulimit -n; echo "args=$0 $#"; readlink /proc/$PPID/exe'

CASES: list[Case] = [
    # ansible.builtin.ping
    Case("ping", "ansible.builtin.ping", {"data": "warm?"}, shows=("ping",)),
    Case("ping-unsupported-parameter", "ansible.builtin.ping", {"bogus": 1}, failed=True, shows=("msg",)),
    Case("ping-crash", "ansible.builtin.ping", {"data": "crash"}, failed=True, shows=("msg", "exception")),
    Case("nonexistent-module", "ansible.builtin.nonexistent", {"x": 1}, failed=True, payload=False),
    # command / shell
    Case("command-stdout", "ansible.builtin.command", {"cmd": "echo hello warm"}, shows=("stdout", "start")),
    Case("command-argv-stdin", "ansible.builtin.command", {"argv": ["cat"], "stdin": "from stdin"}),
    Case(
        "command-rc-nonzero",
        "ansible.builtin.command",
        {"argv": ["sh", "-c", "echo out; echo err >&2; exit 3"]},
        failed=True,
        shows=("rc", "stdout", "stderr", "msg"),
    ),
    Case(
        "command-missing-binary",
        "ansible.builtin.command",
        {"cmd": "/nonexistent/binary"},
        failed=True,
        shows=("rc", "msg"),
    ),
    Case(
        "command-creates-skips",
        "ansible.builtin.command",
        {"cmd": "touch {w}/made", "creates": "{w}/exists"},
        setup="touch $W/exists",
        shows=("msg",),
    ),
    Case("command-check-mode", "ansible.builtin.command", {"cmd": "touch {w}/made"}, check=True, shows=("msg",)),
    Case("command-no-log", "ansible.builtin.command", {"cmd": "echo secret-ish"}, no_log=True, shows=("censored",)),
    Case("shell-environment", "ansible.builtin.shell", {"cmd": _COMMAND_ENV, "chdir": "{w}"}, shows=("stdout",)),
    Case(
        "shell-module-process-cmdline",
        "ansible.builtin.shell",
        {"cmd": "tr '\\000' ' ' < /proc/$PPID/cmdline"},
        # Documented in docs/executors.md (Limits and differences); strict: a fix would flag it.
        xfail="the module process is a fork of the agent: its /proc/<pid>/cmdline is the agent's boot command "
        "('/usr/bin/python3 -c #mh-warm-agent ...'), not '/usr/bin/python3'",
    ),
    Case(
        "shell-pipeline-stderr",
        "ansible.builtin.shell",
        {"cmd": "seq 3 | tac; echo oops >&2; exit 4"},
        failed=True,
        shows=("rc", "stdout", "stderr"),
    ),
    # copy / file / template / tempfile / assemble / unarchive
    Case(
        "copy-content-diff",
        "ansible.builtin.copy",
        {"dest": "{w}/app.conf", "content": "debug = 1\n"},
        diff=True,
        observe=True,
        shows=("diff", "checksum", "src"),
    ),
    Case(
        "copy-content-unchanged",
        "ansible.builtin.copy",
        {"dest": "{w}/app.conf", "content": "debug = 1\n", "mode": "0640"},
        setup="printf 'debug = 1\\n' > $W/app.conf; chmod 0640 $W/app.conf",
        observe=True,
    ),
    Case(
        "copy-content-check-diff",
        "ansible.builtin.copy",
        {"dest": "{w}/app.conf", "content": "debug = 2\n"},
        setup="printf 'debug = 1\\n' > $W/app.conf",
        check=True,
        diff=True,
        shows=("diff",),
    ),
    Case(
        "copy-src-makes-directories",
        "ansible.builtin.copy",
        {"dest": "{w}/no/such/dir/", "src": "{t}/motd.j2"},
        observe=True,
    ),
    Case(
        "copy-remote-src-missing",
        "ansible.builtin.copy",
        {"dest": "{w}/x", "src": "{w}/absent", "remote_src": True},
        failed=True,
        shows=("msg",),
    ),
    Case(
        "file-directory-mode",
        "ansible.builtin.file",
        {"path": "{w}/d", "state": "directory", "mode": "0750"},
        observe=True,
    ),
    Case(
        "file-touch-diff",
        "ansible.builtin.file",
        {"path": "{w}/t", "state": "touch", "mode": "0600"},
        diff=True,
        shows=("diff",),
    ),
    Case(
        "file-state-file-missing",
        "ansible.builtin.file",
        {"path": "{w}/absent", "state": "file"},
        failed=True,
        shows=("msg",),
    ),
    Case(
        "file-absent-check-diff",
        "ansible.builtin.file",
        {"path": "{w}/gone", "state": "absent"},
        setup="mkdir $W/gone; touch $W/gone/f",
        check=True,
        diff=True,
        shows=("diff",),
    ),
    Case(
        "template-diff",
        "ansible.builtin.template",
        {"src": "{t}/motd.j2", "dest": "{w}/motd", "mode": "0644"},
        diff=True,
        observe=True,
        shows=("diff", "checksum"),
    ),
    Case(  # fails on the controller, before any module runs
        "template-missing-source",
        "ansible.builtin.template",
        {"src": "{t}/absent.j2", "dest": "{w}/x"},
        failed=True,
        payload=False,
        shows=("msg",),
    ),
    Case(
        "tempfile",
        "ansible.builtin.tempfile",
        {"state": "file", "suffix": ".mhwarm"},
        teardown="rm -f /tmp/ansible.*.mhwarm",
        shows=("path",),
    ),
    Case(
        "assemble",
        "ansible.builtin.assemble",
        {"src": "{w}/frags", "dest": "{w}/assembled", "delimiter": "# --"},
        setup="mkdir $W/frags; printf 'a\\n' > $W/frags/01; printf 'b\\n' > $W/frags/02",
        observe=True,
        shows=("checksum",),
    ),
    # action plugins whose steps (tmp dir, transfers) go through the agent: the files they leave too
    Case(
        "copy-src-mode-diff",
        "ansible.builtin.copy",
        {"dest": "{w}/motd.txt", "src": "{t}/motd.j2", "mode": "0640"},
        diff=True,
        observe=True,
        shows=("diff", "checksum", "mode"),
    ),
    Case(
        "copy-src-existing-unchanged-diff",
        "ansible.builtin.copy",
        {"dest": "{w}/motd.txt", "src": "{t}/motd.j2"},
        setup=f"printf '%s' {shlex.quote(TEMPLATE)} > $W/motd.txt; chmod 0604 $W/motd.txt",
        diff=True,
        observe=True,
        expect={"changed": False},
    ),
    Case(
        "copy-content-new-file-owner-diff",
        "ansible.builtin.copy",
        {"dest": "{w}/owned.conf", "content": "owned\n", "owner": "nobody", "group": "nogroup", "mode": "u=rw,g=r"},
        diff=True,
        observe=True,
        shows=("diff", "owner", "group", "mode"),
    ),
    Case(
        "copy-content-existing-changed-diff",
        "ansible.builtin.copy",
        {"dest": "{w}/app.conf", "content": "debug = 2\n"},
        setup="printf 'debug = 1\n' > $W/app.conf; chmod 0600 $W/app.conf",
        diff=True,
        observe=True,
        shows=("diff", "checksum"),
        expect={"changed": True},
    ),
    Case(
        "template-existing-mode-diff",
        "ansible.builtin.template",
        {"src": "{t}/motd.j2", "dest": "{w}/motd", "mode": "0600"},
        setup="printf 'old motd\n' > $W/motd",
        diff=True,
        observe=True,
        shows=("diff", "checksum"),
    ),
    Case(
        "fetch-tree",
        "ansible.builtin.fetch",
        {"src": "{w}/remote.conf", "dest": "{l}/"},
        setup="printf 'remote\n' > $W/remote.conf; chmod 0640 $W/remote.conf",
        diff=True,
        observe=True,
        shows=("checksum", "dest"),
        expect={"changed": True},
    ),
    Case(
        "fetch-flat-unchanged",
        "ansible.builtin.fetch",
        {"src": "{w}/remote.conf", "dest": "{l}/copy.conf", "flat": True},
        setup="printf 'remote\n' > $W/remote.conf",
        prepare=lambda runner: runner.local_file("copy.conf", "remote\n"),
        diff=True,
        observe=True,
        expect={"changed": False},
    ),
    Case(
        "fetch-missing-fails",
        "ansible.builtin.fetch",
        {"src": "{w}/absent", "dest": "{l}/", "fail_on_missing": True},
        failed=True,
        shows=("msg",),
    ),
    Case(
        "assemble-local-src-diff",
        "ansible.builtin.assemble",
        {"src": "{t}/frags", "dest": "{w}/assembled", "remote_src": False, "mode": "0640"},
        diff=True,
        observe=True,
        shows=("checksum",),
    ),
    Case(
        "file-directory-diff",
        "ansible.builtin.file",
        {"path": "{w}/d/e", "state": "directory", "mode": "0751"},
        diff=True,
        observe=True,
        shows=("diff",),
    ),
    Case(
        "user-copy-content-become",
        "ansible.builtin.copy",
        {"dest": "{w}/by-sudo.conf", "content": "via sudo\n", "mode": "0600"},
        host="server1-user",
        become=True,
        diff=True,
        observe=True,
        shows=("owner",),
        expect={"owner": "root"},
    ),
    Case(
        "user-copy-content-own",
        "ansible.builtin.copy",
        {"dest": "{w}/shared/mine.conf", "content": "mine\n"},
        setup="mkdir -m 1777 $W/shared",
        host="server1-user",
        diff=True,
        observe=True,
        shows=("owner",),
        expect={"owner": "labuser"},
    ),
    Case(
        "unarchive-remote",
        "ansible.builtin.unarchive",
        {"src": "{w}/a.tar.gz", "dest": "{w}/out", "remote_src": True},
        setup="mkdir -p $W/src $W/out; printf 'x\\n' > $W/src/x; tar -C $W -czf $W/a.tar.gz src",
        shows=("extract_results", "handler"),
    ),
    # line and block editing
    Case(
        "lineinfile-diff",
        "ansible.builtin.lineinfile",
        {"path": "{w}/sshd", "regexp": "^#?Port ", "line": "Port 2222"},
        setup="printf '#Port 22\\nX11Forwarding no\\n' > $W/sshd",
        diff=True,
        shows=("diff", "msg"),
    ),
    Case(
        "lineinfile-check-create",
        "ansible.builtin.lineinfile",
        {"path": "{w}/new.conf", "line": "a = 1", "create": True},
        check=True,
        diff=True,
        shows=("diff", "msg"),
    ),
    Case(
        "lineinfile-missing-file",
        "ansible.builtin.lineinfile",
        {"path": "{w}/absent", "line": "x"},
        failed=True,
        shows=("msg", "rc"),
    ),
    Case(
        "blockinfile-diff",
        "ansible.builtin.blockinfile",
        {"path": "{w}/hosts", "block": "10.0.0.1 a\n10.0.0.2 b", "marker": "# {mark} MHWARM"},
        setup="printf '127.0.0.1 localhost\\n' > $W/hosts",
        diff=True,
        shows=("diff", "msg"),
    ),
    Case(
        "ini_file-diff",
        "ansible.builtin.ini_file",
        {"path": "{w}/app.ini", "section": "main", "option": "level", "value": "3"},
        setup="printf '[main]\\nlevel = 1\\nname = x\\n' > $W/app.ini",
        diff=True,
        shows=("diff", "msg"),
    ),
    Case(
        "replace-diff",
        "ansible.builtin.replace",
        {"path": "{w}/r.txt", "regexp": "(b+)", "replace": "<\\1>"},
        setup="printf 'abba\\nbob\\n' > $W/r.txt",
        diff=True,
        shows=("diff", "msg"),
    ),
    Case(
        "replace-bad-regexp",
        "ansible.builtin.replace",
        {"path": "{w}/r.txt", "regexp": "("},
        setup="printf 'abc\\n' > $W/r.txt",
        failed=True,
        shows=("msg", "exception"),
    ),
    # reading
    Case(
        "stat",
        "ansible.builtin.stat",
        {"path": "{w}/f", "checksum_algorithm": "sha256"},
        setup="printf 'content\\n' > $W/f; chmod 0640 $W/f; " + SETTLE,
        read_only=True,
        shows=("stat",),
    ),
    Case("stat-missing", "ansible.builtin.stat", {"path": "{w}/absent"}, read_only=True, shows=("stat",)),
    Case(
        "slurp",
        "ansible.builtin.slurp",
        {"src": "{w}/f"},
        setup="printf 'bin\\001\\377ary\\n' > $W/f; " + SETTLE,
        read_only=True,
        shows=("content", "encoding"),
    ),
    Case("slurp-missing", "ansible.builtin.slurp", {"src": "{w}/absent"}, read_only=True, failed=True, shows=("msg",)),
    Case(
        "find",
        "ansible.builtin.find",
        {"paths": "{w}", "patterns": ["*.conf", "*.txt"], "recurse": True, "contains": "o"},
        setup=_DATA + "; " + SETTLE,
        read_only=True,
        shows=("files", "examined"),
    ),
    Case(
        "getent-passwd",
        "ansible.builtin.getent",
        {"database": "passwd", "key": "root"},
        read_only=True,
        shows=("ansible_facts",),
    ),
    Case(
        "getent-missing-key",
        "ansible.builtin.getent",
        {"database": "passwd", "key": "mhwarm-nobody"},
        read_only=True,
        failed=True,
        shows=("msg",),
    ),
    # users, groups, services
    Case(
        "user-create-plaintext-password-warning",
        "ansible.builtin.user",
        {"name": "mhwarmu", "comment": "warm test", "shell": "/bin/sh", "password": "not-hashed"},
        setup="userdel -r mhwarmu >/dev/null 2>&1 || true",
        teardown="userdel -r mhwarmu >/dev/null 2>&1 || true",
        shows=("warnings", "uid", "home"),
    ),
    Case(
        "user-check",
        "ansible.builtin.user",
        {"name": "mhwarmu", "groups": ["nogroup"]},
        setup="userdel -r mhwarmu >/dev/null 2>&1 || true",
        check=True,
        shows=("changed",),
        expect={"changed": True},
    ),
    Case(
        "group-create",
        "ansible.builtin.group",
        {"name": "mhwarmg", "gid": 4711},
        setup="groupdel mhwarmg >/dev/null 2>&1 || true",
        teardown="groupdel mhwarmg >/dev/null 2>&1 || true",
        shows=("gid",),
    ),
    Case(
        "service-sysv-start",
        "ansible.builtin.service",
        {"name": DUMMY_SERVICE, "state": "started"},
        setup=f"cat > /etc/init.d/{DUMMY_SERVICE} <<'EOF'\n{DUMMY_SCRIPT}EOF\n"
        f"chmod 0755 /etc/init.d/{DUMMY_SERVICE}; /etc/init.d/{DUMMY_SERVICE} stop",
        teardown=f"/etc/init.d/{DUMMY_SERVICE} stop; rm -f /etc/init.d/{DUMMY_SERVICE}",
        shows=("state",),
    ),
    Case(
        "service-missing",
        "ansible.builtin.service",
        {"name": "mhwarm-no-such", "state": "started"},
        failed=True,
        shows=("msg",),
    ),
    # facts and a deprecation
    Case(
        "setup-date-time",
        "ansible.builtin.setup",
        {"gather_subset": ["!all", "!min", "date_time"]},
        shows=("ansible_facts",),
    ),
    Case(
        "setup-environment",
        "ansible.builtin.setup",
        {"gather_subset": ["!all", "!min", "env"]},
        shows=("ansible_facts",),
    ),
    Case(
        "yum_repository-deprecation",
        "ansible.builtin.yum_repository",
        {
            "name": "mhwarm",
            "description": "warm",
            "baseurl": "http://example.invalid/",
            "reposdir": "{w}",
            "async": True,
        },
        diff=True,
        shows=("deprecations", "diff"),
    ),
    # mh_ansible.rollback
    Case(
        "snapshot",
        "mh_ansible.rollback.snapshot",
        {"name": "eq", "paths": ["{w}/data", "{w}/absent"], "backup_dir": "{w}/snaps", "exclude": ["*.txt"]},
        setup=_DATA,
        shows=("paths", "bytes", "snapshot_dir"),
    ),
    Case(
        "snapshot-check",
        "mh_ansible.rollback.snapshot",
        {"name": "eq", "paths": ["{w}/data"], "backup_dir": "{w}/snaps"},
        setup=_DATA,
        check=True,
        shows=("paths",),
    ),
    Case(
        "snapshot-bad-name",
        "mh_ansible.rollback.snapshot",
        {"name": "-bad/name", "paths": ["{w}"], "backup_dir": "{w}/snaps"},
        failed=True,
        shows=("msg",),
    ),
    Case(
        "restore-diff",
        "mh_ansible.rollback.restore",
        {"name": "eq", "backup_dir": "{w}/snaps"},
        setup=_DATA,
        prepare=_snapshot_then_change,
        diff=True,
        shows=("diff", "restored", "snapshot_removed"),
    ),
    Case(
        "restore-check-diff",
        "mh_ansible.rollback.restore",
        {"name": "eq", "backup_dir": "{w}/snaps"},
        setup=_DATA,
        prepare=_snapshot_then_change,
        check=True,
        diff=True,
        shows=("diff", "restored"),
    ),
    Case(
        "restore-missing-snapshot",
        "mh_ansible.rollback.restore",
        {"name": "never-taken", "backup_dir": "{w}/snaps"},
        failed=True,
        shows=("msg",),
    ),
    Case(
        "write-snapshot-diff",
        "mh_ansible.rollback.write",
        {"dest": "{w}/data/a.conf", "content": "new\n", "mode": "0600", "snapshot": "eq", "backup_dir": "{w}/snaps"},
        setup=_DATA,
        diff=True,
        shows=("diff", "snapshot", "snapshot_dir", "checksum"),
        expect={"changed": True, "snapshot": "eq"},
    ),
    Case(
        "write-new-file",
        "mh_ansible.rollback.write",
        {"dest": "{w}/new.conf", "content": "x = 1\n", "snapshot": "eq", "backup_dir": "{w}/snaps"},
        diff=True,
        shows=("diff", "snapshot"),
        expect={"changed": True},
    ),
    Case(
        "write-unchanged-drops-snapshot",
        "mh_ansible.rollback.write",
        {"dest": "{w}/data/a.conf", "content": "one\n", "snapshot": "eq", "backup_dir": "{w}/snaps"},
        setup=_DATA,
        diff=True,
        expect={"changed": False, "snapshot": None},
    ),
    Case(
        "write-symlink-same-content",
        "mh_ansible.rollback.write",
        {"dest": "{w}/link.conf", "content": "one\n"},
        setup=_DATA + "; ln -s $W/data/a.conf $W/link.conf",
        diff=True,
        expect={"changed": False},
    ),
    Case(
        "write-check-diff",
        "mh_ansible.rollback.write",
        {"dest": "{w}/data/a.conf", "content": "new\n", "mode": "0600"},
        setup=_DATA,
        check=True,
        diff=True,
        shows=("diff",),
        expect={"changed": True},
    ),
    Case(
        "write-missing-parent",
        "mh_ansible.rollback.write",
        {"dest": "{w}/nodir/a.conf", "content": "x\n"},
        failed=True,
        shows=("msg",),
    ),
    Case(
        "host_state",
        "mh_ansible.rollback.host_state",
        {"paths": ["{w}/data"], "packages": True, "services": True},
        setup=_DATA + "; " + SETTLE,
        read_only=True,
        shows=("state", "service_manager"),
    ),
    # become: root -> nobody (sudo without password), the lab user -> root (sudo with its password)
    Case(
        "become-nobody-id",
        "ansible.builtin.command",
        {"cmd": "id -un"},
        become_user="nobody",
        shows=("stdout", "warnings"),
        expect={"stdout": "nobody"},
    ),
    Case(
        "become-nobody-stat-root-only",
        "ansible.builtin.stat",
        {"path": "{w}/private/secret"},
        setup="mkdir -m 0700 $W/private; echo s > $W/private/secret",
        become_user="nobody",
        read_only=True,
        failed=True,
        shows=("msg",),
    ),
    Case(
        "become-nobody-slurp-root-only",
        "ansible.builtin.slurp",
        {"src": "{w}/secret"},
        setup="echo s > $W/secret; chmod 0600 $W/secret",
        become_user="nobody",
        read_only=True,
        failed=True,
        shows=("msg",),
    ),
    Case(
        "become-nobody-file-touch",
        "ansible.builtin.file",
        {"path": "{w}/shared/mine", "state": "touch"},
        setup="mkdir -m 1777 $W/shared",
        become_user="nobody",
        shows=("owner",),
        expect={"owner": "nobody"},
    ),
    Case(
        "become-nobody-copy-content",
        "ansible.builtin.copy",
        {"dest": "{w}/shared/copied", "content": "x\n"},
        setup="mkdir -m 1777 $W/shared",
        become_user="nobody",
        shows=("owner", "checksum"),
        expect={"owner": "nobody"},
    ),
    Case(
        "become-nobody-environment",
        "ansible.builtin.setup",
        {"gather_subset": ["!all", "!min", "env"]},
        become_user="nobody",
    ),
    Case(
        "lab-user-id",
        "ansible.builtin.command",
        {"cmd": "id -un"},
        host="server1-user",
        shows=("stdout",),
        expect={"stdout": "labuser"},
    ),
    Case(
        "lab-user-become-root-id",
        "ansible.builtin.command",
        {"cmd": "id -un"},
        host="server1-user",
        become=True,
        shows=("stdout",),
        expect={"stdout": "root"},
    ),
    Case(
        "lab-user-stat-root-only",
        "ansible.builtin.stat",
        {"path": "{w}/private/secret"},
        setup="mkdir -m 0700 $W/private; echo s > $W/private/secret",
        host="server1-user",
        read_only=True,
        failed=True,
        shows=("msg",),
    ),
]


# --- normalization: only what differs between two standard runs ---------------------------------


@dataclass(frozen=True)
class Normalizer:
    """One field (or part of a value) that differs between two standard runs, and why.

    ``example`` names a case whose two standard runs differ without it: ``test_normalizer_is_needed``
    runs that case twice through standard executors and shows so.
    """

    name: str
    why: str
    example: str
    apply: Callable[[dict[str, Any], str], None]  # (result copy, module) -> None, edits in place


_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$")
_DELTA = re.compile(r"^\d+:\d\d:\d\d\.\d{6}$")


def _command_timing(result: dict[str, Any], module: str) -> None:
    """command/shell report wall-clock ``start``/``end`` and the run time ``delta``."""
    if module not in ("ansible.builtin.command", "ansible.builtin.shell"):
        return
    for key, pattern in (("start", _TIMESTAMP), ("end", _TIMESTAMP), ("delta", _DELTA)):
        if key in result and result[key] is not None:
            assert pattern.match(str(result[key])), f"{key}={result[key]!r} is no {key} time"
            result[key] = f"<{key}>"


_REMOTE_TMP = re.compile(r"/ansible-tmp-\d+\.\d+-\d+-\d+/")


def _remote_tmp(result: dict[str, Any], module: str) -> None:
    """Action plugins upload files into a per-call remote dir ``ansible-tmp-<time>-<pid>-<random>``."""
    _edit_strings(result, lambda text: _REMOTE_TMP.sub("/ansible-tmp-<call>/", text))


_LOCAL_TEMP_NAME = re.compile(r"^\.[a-z0-9_]{8}$")


def _content_tempfile(result: dict[str, Any], module: str) -> None:
    """copy ``content=`` is written to a local temp file first; its random name goes as ``_original_basename``."""
    args = (result.get("invocation") or {}).get("module_args") or {}
    name = args.get("_original_basename")
    if isinstance(name, str) and _LOCAL_TEMP_NAME.match(name):
        args["_original_basename"] = "<local temp file>"


_TEMPFILE_NAME = re.compile(r"^(/tmp/ansible\.)[a-z0-9_]{8}(\.mhwarm)$")


def _tempfile_name(result: dict[str, Any], module: str) -> None:
    """tempfile makes a new random name each time (``mkstemp``)."""
    if module == "ansible.builtin.tempfile" and isinstance(result.get("path"), str):
        result["path"] = _TEMPFILE_NAME.sub(r"\1<random>\2", result["path"])


def _date_time(result: dict[str, Any], module: str) -> None:
    """The date_time facts are the clock (their keys are kept and compared)."""
    facts = result.get("ansible_facts") or {}
    if isinstance(facts.get("ansible_date_time"), dict):
        facts["ansible_date_time"] = dict.fromkeys(facts["ansible_date_time"], "<clock>")


def _touch_times(result: dict[str, Any], module: str) -> None:
    """file state=touch reports the times it set (``atime``/``mtime`` of the diff's before and after)."""
    if module != "ansible.builtin.file":
        return
    diff = result.get("diff")
    for entry in diff if isinstance(diff, list) else [diff] if isinstance(diff, dict) else []:
        for side in ("before", "after"):
            for key in ("atime", "mtime"):
                if isinstance(entry.get(side), dict) and key in entry[side]:
                    assert isinstance(entry[side][key], float), entry[side]
                    entry[side][key] = "<clock>"


_LOCAL_TMP = re.compile(r"(/ansible-local-[^/]+/)tmp[a-z0-9_]{8}\b")


def _local_tmp(result: dict[str, Any], module: str) -> None:
    """template and assemble write to a new local temp path per call; the diff's ``after_header`` names it."""
    _edit_strings(result, lambda text: _LOCAL_TMP.sub(r"\1tmp<call>", text))


_SSH_SOURCE = re.compile(r"\b(\d+\.\d+\.\d+\.\d+) \d+ ((?:\d+\.\d+\.\d+\.\d+ )?22)\b")


def _ssh_source_port(result: dict[str, Any], module: str) -> None:
    """SSH_CLIENT/SSH_CONNECTION name the client's source port: each executor has its own ssh connection."""
    _edit_strings(result, lambda text: _SSH_SOURCE.sub(r"\1 <port> \2", text))


_BECOME_KEY = re.compile(r"BECOME-SUCCESS-[a-z]{32}")


def _become_key(result: dict[str, Any], module: str) -> None:
    """Each become command carries a random success marker, seen by the module in ``SUDO_COMMAND``."""
    _edit_strings(result, lambda text: _BECOME_KEY.sub("BECOME-SUCCESS-<key>", text))


NORMALIZERS: list[Normalizer] = [
    Normalizer("command-timing", _command_timing.__doc__ or "", "command-stdout", _command_timing),
    Normalizer("remote-tmp", _remote_tmp.__doc__ or "", "copy-content-diff", _remote_tmp),
    Normalizer("content-tempfile", _content_tempfile.__doc__ or "", "copy-content-diff", _content_tempfile),
    Normalizer("tempfile-name", _tempfile_name.__doc__ or "", "tempfile", _tempfile_name),
    Normalizer("date-time", _date_time.__doc__ or "", "setup-date-time", _date_time),
    Normalizer("touch-times", _touch_times.__doc__ or "", "file-touch-diff", _touch_times),
    Normalizer("local-tmp", _local_tmp.__doc__ or "", "template-diff", _local_tmp),
    Normalizer("ssh-source-port", _ssh_source_port.__doc__ or "", "setup-environment", _ssh_source_port),
    Normalizer("become-key", _become_key.__doc__ or "", "become-nobody-environment", _become_key),
]


def _edit_strings(value: Any, edit: Callable[[str], str]) -> Any:
    """Apply ``edit`` to every string inside ``value`` (in place for containers)."""
    if isinstance(value, dict):
        for key, item in value.items():
            value[key] = _edit_strings(item, edit)
    elif isinstance(value, list):
        value[:] = [_edit_strings(item, edit) for item in value]
    elif isinstance(value, str):
        return edit(value)
    return value


def normalized(result: dict[str, Any], module: str, *, skip: str | None = None) -> dict[str, Any]:
    """A copy of ``result`` with every normalizer applied (but ``skip``)."""
    result = copy.deepcopy(result)
    for normalizer in NORMALIZERS:
        if normalizer.name != skip:
            normalizer.apply(result, module)
    return result


def differences(
    expected: Any, actual: Any, path: str = "result", names: tuple[str, str] = ("standard", "warm")
) -> list[str]:
    """Every place where ``actual`` differs from ``expected``: keys, values and their types."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        found = []
        for key in sorted(set(expected) | set(actual), key=str):
            where = f"{path}[{key!r}]"
            if key not in actual:
                found.append(f"{where}: missing (expected {expected[key]!r})")
            elif key not in expected:
                found.append(f"{where}: unexpected {actual[key]!r}")
            else:
                found += differences(expected[key], actual[key], where, names)
        return found
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{path}: {len(actual)} items, expected {len(expected)}: {actual!r} != {expected!r}"]
        pairs = enumerate(zip(expected, actual, strict=True))
        return [found for i, (e, a) in pairs for found in differences(e, a, f"{path}[{i}]", names)]
    if type(expected) is not type(actual) or expected != actual:
        return [f"{path}: {actual!r} ({names[1]}) != {expected!r} ({names[0]})"]
    return []


# --- running a case --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The controller-side directory of ``motd.j2``."""
    path = tmp_path_factory.mktemp("mhwarm-templates")
    (path / "motd.j2").write_text(TEMPLATE)
    (path / "frags").mkdir()
    (path / "frags" / "01-head").write_text("# head\n")
    (path / "frags" / "02-body").write_text("body = 1\n")
    return path


@pytest.fixture(scope="session", autouse=True)
def _base_dir(on_host: Any) -> Iterator[None]:
    # Ansible's remote tmp (root's and the lab user's) exists before the first case. A module that
    # needs it (blockinfile, copy) warns "Module remote_tmp ... did not exist and was created" when it
    # makes it, and only the first such call on a fresh host does: whichever case the test order put
    # first differed between its two standard runs (CI of 6 December: blockinfile-diff, 2.21).
    on_host(
        f"rm -rf {BASE}; mkdir -p {BASE}; mkdir -p -m 0700 /root/.ansible/tmp\n"
        "home=$(getent passwd labuser | cut -d: -f6)\n"
        "mkdir -p -m 0700 $home/.ansible/tmp; chown -R labuser: $home/.ansible"
    )
    yield
    on_host(f"rm -rf {BASE}")


def _with_paths(value: Any, workdir: str, templates: Path, local: Path) -> Any:
    if isinstance(value, str):
        return value.replace("{w}", workdir).replace("{t}", str(templates)).replace("{l}", str(local))
    if isinstance(value, dict):
        return {k: _with_paths(v, workdir, templates, local) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_paths(v, workdir, templates, local) for v in value]
    return value


# Each file under $W: path, type, mode, owner, group and (regular files) the sha256 of its content.
_FILES_STATE = (
    "cd $W && find . -mindepth 1 -printf '%P %y %m %u %g ' -exec sh -c "
    '\'if [ -f "$1" ] && [ ! -L "$1" ]; then sha256sum < "$1" | cut -d" " -f1; else echo -; fi\' sh {} \\; | sort'
)


def _local_state(root: Path) -> list[str]:
    """Each file under ``root`` on the controller: path, mode and the sha256 of its content."""
    import hashlib

    if not root.exists():
        return []
    return sorted(
        f"{path.relative_to(root)} {path.stat().st_mode & 0o7777:o} "
        + (hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "-")
        for path in root.rglob("*")
    )


class Runner:
    """Runs a case's call through an executor, each time from the case's initial state."""

    def __init__(self, case: Case, on_host: Any, standard: StandardExecutor, templates: Path) -> None:
        self.case = case
        self.on_host = on_host
        self.standard = standard
        self.workdir = f"{BASE}/{case.id}"
        self.local = templates.parent / f"mhwarm-local-{case.id}"
        self.args = _with_paths(case.args, self.workdir, templates, self.local)
        self.states: list[list[str]] = []  # with ``observe``: the files after each run
        self._set_up = False

    def reset(self) -> None:
        """A fresh workdir (and controller dir), the case's set-up (and its prepare step)."""
        self.on_host(f"W={self.workdir}; rm -rf $W; mkdir -p $W\n{self.case.setup or ':'}")
        shutil.rmtree(self.local, ignore_errors=True)
        self.local.mkdir()
        if self.case.prepare is not None:
            self.case.prepare(self)
        self._set_up = True

    def local_file(self, name: str, content: str) -> None:
        """A file in the case's controller directory (for ``prepare``)."""
        (self.local / name).write_text(content)

    def run(self, executor: StandardExecutor) -> dict[str, Any]:
        """The call's result; the state is reset first (once only for a read-only call)."""
        if not (self.case.read_only and self._set_up):
            self.reset()
        case = self.case
        result = executor.run(
            case.host,
            case.module,
            self.args,
            check=case.check,
            diff=case.diff,
            become=case.become,
            become_user=case.become_user,
            no_log=case.no_log,
            template=False,
        )
        if case.observe:
            on_host = self.on_host(f"W={self.workdir}\n{_FILES_STATE}").stdout.splitlines()
            self.states.append([f"server1: {line}" for line in on_host] + _local_state(self.local))
        return result

    def teardown(self) -> None:
        self.on_host(f"W={self.workdir}\n{self.case.teardown or ':'}\nrm -rf $W")
        shutil.rmtree(self.local, ignore_errors=True)


@pytest.fixture
def runner_for(on_host: Any, standard: StandardExecutor, templates: Path) -> Callable[[Case], Runner]:
    """Makes the Runner of a case (set-up through ``on_host``, prepare steps through ``standard``)."""
    return lambda case: Runner(case, on_host, standard, templates)


def _dump(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=1, sort_keys=True, default=repr)[:4000]


class WarmResultDiffers(AssertionError):
    """The warm executor's result differs from the standard one's: the one failure a case's ``xfail`` expects.

    Any other failure of an xfail case (the case no longer tests what it says, a fallback to the
    standard path, a crash) fails it, as for every other case.
    """


def _params() -> list[Any]:
    return [
        pytest.param(
            case,
            id=case.id,
            marks=[pytest.mark.xfail(reason=case.xfail, raises=WarmResultDiffers, strict=True)] if case.xfail else [],
        )
        for case in CASES
    ]


@pytest.mark.parametrize("case", _params())
def test_same_result(
    case: Case,
    standard: StandardExecutor,
    standard_again: StandardExecutor,
    warm: WarmExecutor,
    runner_for: Callable[[Case], Runner],
) -> None:
    runner = runner_for(case)
    try:
        first = runner.run(standard)
        second = runner.run(standard_again)
        served = runner.run(warm)
        route = warm.last_route
        # Again: the agent holds the module's zip (the payload names it) and has imported its module_utils.
        served_again = runner.run(warm)
        route_again = warm.last_route
    finally:
        runner.teardown()

    assert bool(first.get("failed")) is case.failed, f"the case does not test what it says:\n{_dump(first)}"
    assert all(key in first for key in case.shows), f"the case does not show {case.shows}:\n{_dump(first)}"
    assert {key: first.get(key) for key in case.expect} == case.expect, _dump(first)
    again = ("standard", "standard_again")
    noise = differences(normalized(first, case.module), normalized(second, case.module), names=again)
    assert not noise, "two standard runs differ beyond the normalizers:\n" + "\n".join(noise)
    for which, result in (("warm", served), ("warm, its second call", served_again)):
        found = differences(normalized(first, case.module), normalized(result, case.module), names=("standard", which))
        if found:
            raise WarmResultDiffers(
                f"the {which} result differs:\n"
                + "\n".join(found)
                + f"\n--- standard:\n{_dump(first)}\n--- {which}:\n{_dump(result)}"
            )
    if case.observe:
        first_files, second_files, *warm_files = runner.states
        assert first_files, "the case observes no file"
        assert first_files == second_files, f"two standard runs leave other files:\n{first_files}\n{second_files}"
        for which, files in zip(("warm", "warm, its second call"), warm_files, strict=True):
            if files != first_files:
                raise WarmResultDiffers(f"the {which} call leaves other files:\n{first_files}\n{files}")
    for taken in (route, route_again):
        if case.payload:
            assert taken[0] >= 1, f"no module payload went to the agent (route {taken})"
            assert taken[1] == 0, f"a module payload fell back to the standard path (route {taken})"
            assert warm.agents(), "no warm agent is running"
        else:
            assert taken[1] == 0, f"a call without module payload fell back (route {taken})"


@pytest.mark.parametrize("normalizer", NORMALIZERS, ids=[n.name for n in NORMALIZERS])
def test_normalizer_is_needed(
    normalizer: Normalizer,
    standard: StandardExecutor,
    standard_again: StandardExecutor,
    runner_for: Callable[[Case], Runner],
) -> None:
    """Two standard runs of the normalizer's example differ without it, and not with all of them."""
    case = next(case for case in CASES if case.id == normalizer.example)
    runner = runner_for(case)
    try:
        first = runner.run(standard)
        second = runner.run(standard_again)
    finally:
        runner.teardown()
    without = differences(
        normalized(first, case.module, skip=normalizer.name), normalized(second, case.module, skip=normalizer.name)
    )
    assert without, f"{normalizer.name} ({normalizer.why}) is not needed: two standard runs agree without it"
    assert not differences(normalized(first, case.module), normalized(second, case.module))


def test_enough_modules_are_covered() -> None:
    modules = {case.module for case in CASES if case.payload}
    builtin = {m for m in modules if m.startswith("ansible.builtin.")}
    rollback = {m for m in modules if m.startswith("mh_ansible.rollback.")}
    assert len(builtin) + len(rollback) >= 15
    assert rollback == {
        "mh_ansible.rollback.snapshot",
        "mh_ansible.rollback.restore",
        "mh_ansible.rollback.host_state",
        "mh_ansible.rollback.write",
    }


# --- the agent's lifetime ----------------------------------------------------------------------------


def test_last_route_is_reset_by_a_call_without_payload(warm: WarmExecutor) -> None:
    """A call that never reaches a module (an unknown module) must not report the previous call's route."""
    warm.run("server1", "ansible.builtin.ping", {}, **_CALL)
    assert warm.last_route == (1, 0)
    result = warm.run("server1", "ansible.builtin.nonexistent", {}, **_CALL)
    assert result["failed"]
    assert warm.last_route == (0, 0)


_AGENTS = "pgrep -f 'mh-warm-[a]gent' || true"
_LEFTOVERS = (
    "find /tmp /var/tmp /root/.ansible/tmp -maxdepth 2 \\( -name 'mh-warm-*' -o -name 'ansible_*_payload_*' \\) "
    "2>/dev/null || true"
)


def _shell(standard: StandardExecutor, command: str) -> list[str]:
    result = standard.run("server1", "ansible.builtin.shell", {"cmd": command}, **_CALL)
    assert not result.get("failed"), result
    return str(result["stdout"]).split()


def test_close_leaves_nothing_on_the_target(warm: WarmExecutor, standard: StandardExecutor, on_host: Any) -> None:
    """close() stops every agent (root's and become nobody's) and removes their preload directories."""
    assert warm.run("server1", "ansible.builtin.ping", {}, **_CALL)["ping"] == "pong"
    as_nobody = warm.run("server1", "ansible.builtin.command", {"cmd": "id -un"}, **{**_CALL, "become_user": "nobody"})
    assert as_nobody["stdout"] == "nobody"
    running = {pid for _, pid in warm.agents()}
    assert len(running) >= 2, warm.agents()
    on_target = {int(pid) for pid in _shell(standard, _AGENTS)}
    assert running <= on_target, f"agents {running} not found on the target ({on_target})"

    warm.close()

    assert warm.agents() == []
    assert _shell(standard, _AGENTS) == [], "agent processes are left on the target after close()"
    assert on_host(_AGENTS).stdout.split() == [], "agent processes are left on the target after close()"
    # Not through a module: its own payload directory would be found.
    assert on_host(_LEFTOVERS).stdout.split() == [], "temporary directories are left on the target after close()"
    # The executor may be used again: a new agent serves the next call.
    assert warm.run("server1", "ansible.builtin.ping", {}, **_CALL)["ping"] == "pong"
    assert warm.last_route == (1, 0)


def test_a_module_zip_is_sent_once_then_named(inventory: Inventory, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent keeps each module's zip (most of a payload): the next call of the module names it instead
    of sending it again, and gets the same result; another module's zip is sent in full once too."""
    frames: list[int] = []
    send_frame = warm_module._Agent._send_frame

    def counting(agent: Any, data: bytes) -> None:
        frames.append(len(data))
        send_frame(agent, data)

    monkeypatch.setattr(warm_module._Agent, "_send_frame", counting)
    fresh = WarmExecutor(inventory)  # its agents hold no zip yet
    try:
        payloads: list[int] = []
        results = []
        for module, args in [
            ("ansible.builtin.stat", {"path": "/etc/hostname"}),
            ("ansible.builtin.stat", {"path": "/etc/hostname"}),
            ("ansible.builtin.ping", {}),
            ("ansible.builtin.ping", {}),
            ("ansible.builtin.stat", {"path": "/etc/passwd"}),
        ]:
            frames.clear()
            results.append(fresh.run("server1", module, args, **_CALL))
            assert fresh.last_route == (1, 0), f"{module} was not served by the agent"
            payloads.append(frames[-1])  # a call's frames: its header, then its payload
    finally:
        fresh.close()
    full_stat, named_stat, full_ping, named_ping, other_stat = payloads
    assert min(full_stat, full_ping) > 50_000, payloads
    assert max(named_stat, named_ping, other_stat) < 20_000, payloads
    first, second = ({k: v for k, v in r["stat"].items() if k != "atime"} for r in results[:2])  # stat reads it
    assert first == second
    assert results[1]["stat"]["path"] == "/etc/hostname"
    assert results[4]["stat"]["path"] == "/etc/passwd"
    assert results[2]["ping"] == results[3]["ping"] == "pong"


_LOADED_MODULE_UTILS = b"""
import sys
print(" ".join(sorted(name for name in sys.modules if name.startswith("ansible.module_utils."))))
"""


def test_a_modules_module_utils_are_loaded_in_the_agent_after_its_first_call(inventory: Inventory) -> None:
    """What a module imported beyond ``basic`` (``setup``: the facts package) is imported by the agent once
    the call is answered: the module's next calls fork with it loaded, as with ``basic``."""
    fresh = WarmExecutor(inventory)
    facts = "ansible.module_utils.facts.ansible_collector"

    def loaded() -> set[str]:
        (agent,) = fresh._pool.agents()
        answer, out, err = agent.run({}, _LOADED_MODULE_UTILS, op="script")
        assert answer["rc"] == 0, err
        return set(out.decode().split())

    try:
        args = {"gather_subset": ["!all"], "filter": ["ansible_distribution*"]}
        first = fresh.run("server1", "ansible.builtin.setup", args, **_CALL)
        after_first = loaded()
        second = fresh.run("server1", "ansible.builtin.setup", args, **_CALL)
        assert fresh.last_route == (1, 0)
    finally:
        fresh.close()
    assert "ansible.module_utils.basic" in after_first
    assert facts in after_first
    assert first["ansible_facts"] == second["ansible_facts"]
    assert first["ansible_facts"]["ansible_distribution"]


def test_a_module_utils_not_loaded_before_a_module_imports_it(inventory: Inventory) -> None:
    """The agent imports only ``basic`` up front and what modules imported: a ``ping`` agent has no facts."""
    fresh = WarmExecutor(inventory)
    try:
        fresh.run("server1", "ansible.builtin.ping", {}, **_CALL)
        fresh.run("server1", "ansible.builtin.ping", {}, **_CALL)
        (agent,) = fresh._pool.agents()
        answer, out, _ = agent.run({}, _LOADED_MODULE_UTILS, op="script")
    finally:
        fresh.close()
    assert answer["rc"] == 0
    names = set(out.decode().split())
    assert "ansible.module_utils.basic" in names
    assert not any(name.startswith("ansible.module_utils.facts") for name in names), sorted(names)


_LOADED_STDLIB = b"""
import sys
print(" ".join(name for name in ("calendar", "ctypes.util", "pty", "termios") if name in sys.modules))
"""


def test_the_stdlib_modules_a_module_imported_are_loaded_in_the_agent_after_its_call(inventory: Inventory) -> None:
    """The ``user`` module imports ``pty``, ``calendar``, ``ctypes.util`` and ``termios``, which ``basic`` does
    not: after its first call the agent has them (its next calls fork with them loaded), and the
    result of the next call is the first one's."""
    fresh = WarmExecutor(inventory)

    def loaded() -> str:
        (agent,) = fresh._pool.agents()
        answer, out, err = agent.run({}, _LOADED_STDLIB, op="script")
        assert answer["rc"] == 0, err
        return out.decode().strip()

    try:
        fresh.run("server1", "ansible.builtin.ping", {}, **_CALL)
        after_ping = loaded()
        args = {"name": "root", "state": "present"}
        first = fresh.run("server1", "ansible.builtin.user", args, **{**_CALL, "check": True})
        after_user = loaded()
        second = fresh.run("server1", "ansible.builtin.user", args, **{**_CALL, "check": True})
        assert fresh.last_route == (1, 0)
    finally:
        fresh.close()
    assert (after_ping, after_user) == ("", "calendar ctypes.util pty termios")
    assert first == second
    assert first["changed"] is False
