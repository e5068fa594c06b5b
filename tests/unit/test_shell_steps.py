"""The action plugins' shell steps that the warm agent does with system calls, against /bin/sh doing them.

The commands come from ansible-core's own ``sh`` shell plugin; each one is run twice on this
machine, once by ``/bin/sh -c`` (as the agent's ``exec`` runs it, with Ansible's ``&& sleep 0``)
and once by the real agent's ``step`` op, in two copies of the same directory tree: the exit
status, the output and the resulting tree must be the same.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_warm import _LocalAgent

from pytest_mh_ansible._private.ansible.shell_steps import step_request


@pytest.fixture(scope="module")
def sh() -> Any:
    """ansible-core's ``sh`` shell plugin, as a connection builds its commands with it."""
    from ansible.plugins.loader import shell_loader

    plugin = shell_loader.get("sh")
    plugin.set_options(var_options={}, direct={})
    return plugin


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_LocalAgent]:
    from pytest_mh_ansible._private.ansible.warm import _agent_source

    here = tmp_path_factory.mktemp("agent")
    started = _LocalAgent(_agent_source(), dict(os.environ), here)
    yield started
    started.close()


def test_step_request__the_plugins_own_commands(sh: Any) -> None:
    name = "ansible-tmp-1796685260.36-3305055-2617"
    assert step_request(sh.expand_user("~", username="root")) == {"do": "home", "user": "root"}
    assert step_request(sh.expand_user("~")) == {"do": "home", "user": ""}
    assert step_request(sh.mkdtemp(basefile=name, tmpdir="/root/.ansible/tmp")) == {
        "do": "mkdtemp",
        "umask": 0o77,
        "base": "/root/.ansible/tmp",
        "path": f"/root/.ansible/tmp/{name}",
    }
    assert step_request(sh.mkdtemp(basefile=name, system=True, tmpdir="/tmp/"))["path"] == f"/tmp/{name}"  # type: ignore[index]
    assert step_request(sh.chmod(["/t/a b/", "/t/c"], "u+rwx")) == {
        "do": "chmod",
        "add": 0o700,
        "drop": 0,
        "paths": ["/t/a b/", "/t/c"],
    }
    assert step_request(sh.chmod(["/t/c"], "a+rx")) == {"do": "chmod", "add": 0o555, "drop": 0, "paths": ["/t/c"]}
    assert step_request(sh.chmod(["/t/c"], "go-w")) == {"do": "chmod", "add": 0, "drop": 0o022, "paths": ["/t/c"]}
    assert step_request(sh.remove("/t/x y/", recurse=True)) == {"do": "remove", "path": "/t/x y/", "recurse": True}
    assert step_request(sh.remove("/t/f")) == {"do": "remove", "path": "/t/f", "recurse": False}


@pytest.mark.parametrize(
    "cmd",
    [
        "echo $HOME",
        "echo '~bad name'",
        "echo ~root; id",
        # a tmp base the shell would expand, split or glob: it runs in a shell
        '( umask 77 && mkdir -p "` echo $HOME/tmp `"&& mkdir "` echo $HOME/tmp/a `" && echo a="` echo $HOME/tmp/a `" )',
        '( umask 77 && mkdir -p "` echo /t/* `"&& mkdir "` echo /t/*/a `" && echo a="` echo /t/*/a `" )',
        '( umask 77 && mkdir -p "` echo ~/tmp `"&& mkdir "` echo ~/tmp/a `" && echo a="` echo ~/tmp/a `" )',
        # the directory it prints is not the one it makes
        '( umask 77 && mkdir -p "` echo /t `"&& mkdir "` echo /t/a `" && echo a="` echo /t/b `" )',
        "chmod +a 'user:x allow read' /t/c",  # macOS ACLs
        "chmod u=rwX /t/c",
        "chmod 0755 /t/c",
        "chmod u+rwx relative/path",
        "chmod u+rwx /t/$x",
        "chmod u+rwx '/t/a'b",
        "rm -f -r /t/a /t/b > /dev/null 2>&1",
        "rm -f -r /t/* > /dev/null 2>&1",
        "rm -f -r relative > /dev/null 2>&1",
        "rm -rf /t/a",
        "mkdir /t/a",
    ],
)
def test_step_request__anything_else_runs_in_a_shell(cmd: str) -> None:
    assert step_request(cmd) is None


def _tree(root: Path) -> dict[str, tuple[str, int]]:
    """Every entry under ``root``: its kind and mode."""
    found: dict[str, tuple[str, int]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        kind = "dir" if stat.S_ISDIR(info.st_mode) else "link" if stat.S_ISLNK(info.st_mode) else "file"
        found[str(path.relative_to(root))] = (kind, stat.S_IMODE(info.st_mode))
    return found


def _layout(root: Path) -> None:
    (root / "tmp").mkdir(mode=0o755)
    (root / "tmp" / "taken").mkdir()
    (root / "plain").write_text("x\n")
    (root / "plain").chmod(0o600)
    (root / "blocker").write_text("a file where a directory goes\n")
    tree = root / "tree" / "deep" / "er"
    tree.mkdir(parents=True)
    (tree / "f").write_text("f\n")
    (root / "link").symlink_to(root / "plain")


Build = Callable[[Any, Path], str]

_CASES: dict[str, Build] = {
    "mkdtemp in an existing base": lambda sh, r: sh.mkdtemp(basefile="ansible-tmp-1", tmpdir=f"{r}/tmp"),
    "mkdtemp with new parents": lambda sh, r: sh.mkdtemp(basefile="ansible-tmp-2", tmpdir=f"{r}/new/parents"),
    "mkdtemp of a taken name": lambda sh, r: sh.mkdtemp(basefile="taken", tmpdir=f"{r}/tmp"),
    "mkdtemp under a file": lambda sh, r: sh.mkdtemp(basefile="ansible-tmp-3", tmpdir=f"{r}/blocker"),
    "chmod u+rwx of a file and a directory": lambda sh, r: sh.chmod([f"{r}/plain", f"{r}/tmp/"], "u+rwx"),
    "chmod a+rx through a symlink": lambda sh, r: sh.chmod([f"{r}/link"], "a+rx"),
    "chmod go-rx": lambda sh, r: sh.chmod([f"{r}/tmp"], "go-rx"),
    "chmod of a missing path among others": lambda sh, r: sh.chmod([f"{r}/missing", f"{r}/plain"], "u+x"),
    "rm -r of a tree": lambda sh, r: sh.remove(f"{r}/tree/", recurse=True),
    "rm -r of a file": lambda sh, r: sh.remove(f"{r}/plain", recurse=True),
    "rm -r of nothing": lambda sh, r: sh.remove(f"{r}/missing", recurse=True),
    "rm of a symlink": lambda sh, r: sh.remove(f"{r}/link"),
    "rm of a directory without -r": lambda sh, r: sh.remove(f"{r}/tmp"),
    "home of root": lambda sh, r: sh.expand_user("~", username="root"),
    "home of nobody known": lambda sh, r: sh.expand_user("~", username="no-such-user-mh"),
    "home of the login": lambda sh, r: sh.expand_user("~"),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_agent_step__does_what_the_shell_does(case: str, sh: Any, agent: _LocalAgent, tmp_path: Path) -> None:
    by_shell, by_agent = tmp_path / "shell", tmp_path / "agent"
    for root in (by_shell, by_agent):
        root.mkdir()
        _layout(root)
    shell_cmd = sh.append_command(_CASES[case](sh, by_shell), "sleep 0")
    done = subprocess.run(["/bin/sh", "-c", shell_cmd], capture_output=True, check=False)

    request = step_request(_CASES[case](sh, by_agent))
    assert request is not None
    _, answer, out, err = agent.ask(json.dumps({"op": "step", **request}).encode())
    header = json.loads(answer)

    assert header["rc"] == done.returncode, (done.stderr, err)
    assert out.replace(bytes(by_agent), bytes(by_shell)) == done.stdout
    assert bool(err) == bool(done.stderr), (done.stderr, err)
    assert _tree(by_agent) == _tree(by_shell)


def test_agent_step__a_symlink_named_with_a_trailing_slash_goes_to_a_shell(agent: _LocalAgent, tmp_path: Path) -> None:
    """``rm -rf link/`` is the shell's business (what it removes depends on rm): the agent declines it."""
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "kept").write_text("kept\n")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    request = step_request(f"rm -f -r {tmp_path}/link/ > /dev/null 2>&1")
    assert request is not None
    _, answer, _, _ = agent.ask(json.dumps({"op": "step", **request}).encode())
    assert "fallback" in json.loads(answer)
    assert (tmp_path / "target" / "kept").exists()
    shutil.rmtree(tmp_path / "target")
