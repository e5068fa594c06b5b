"""An action plugin's own steps on a warm host: its tmp dir commands and its file transfers go through the agent.

``copy``, ``template`` and ``fetch`` do more on the target than run a module: they make and
remove a tmp dir and transfer files, each a new ssh or sftp client on the standard path. On
the warm executor these go to the agent's open channel. The tests count the ssh plugin's own
client runs (``exec_command`` and the sftp/scp transfer) to show that none is started, check
the files that arrive, and show the standard path taking over for a file above the size limit.
What the calls return is compared with the standard executor in ``test_equivalence.py``.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_mh_ansible._private.ansible import compat
from pytest_mh_ansible._private.ansible import warm as warm_module
from pytest_mh_ansible._private.ansible.executor import StandardExecutor
from pytest_mh_ansible._private.ansible.inventory import Inventory
from pytest_mh_ansible._private.ansible.warm import WarmExecutor
from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

BASE = "/tmp/mhwarm-steps"
CALL: dict[str, Any] = dict(check=False, diff=True, become=None, become_user=None, no_log=False, template=False)


@pytest.fixture
def fresh(inventory: Inventory) -> Iterator[WarmExecutor]:
    """A warm executor of its own: its first call starts its agents."""
    executor = WarmExecutor(inventory)
    yield executor
    executor.close()


@pytest.fixture
def ssh_clients(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts what the ssh plugin starts a client process for: commands and sftp/scp transfers."""
    from ansible.plugins.connection import ssh

    counts = {"commands": 0, "transfers": 0}
    exec_command = ssh.Connection.exec_command
    file_transport = ssh.Connection._file_transport_command

    def counted_exec(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["commands"] += 1
        return exec_command(self, *args, **kwargs)

    def counted_transfer(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["transfers"] += 1
        return file_transport(self, *args, **kwargs)

    monkeypatch.setattr(ssh.Connection, "exec_command", counted_exec)
    monkeypatch.setattr(ssh.Connection, "_file_transport_command", counted_transfer)
    return counts


@pytest.fixture(autouse=True)
def _workdir(on_host: Any) -> Iterator[None]:
    on_host(f"rm -rf {BASE}; mkdir -p {BASE}")
    yield
    on_host(f"rm -rf {BASE}")


def _host_file(on_host: Any, path: str) -> str:
    """``<mode> <owner> <sha256>`` of a file on server1."""
    return str(on_host(f"stat -c '%a %U' {path} | tr '\\n' ' '; sha256sum < {path} | cut -d' ' -f1").stdout.strip())


def test_copy__tmp_dir_and_transfer_through_the_agent_no_ssh_client(
    fresh: WarmExecutor, standard: StandardExecutor, ssh_clients: dict[str, int], on_host: Any
) -> None:
    """Even the first call: the agent that makes the tmp dir starts with the interpreter the host's variables name."""
    result = fresh.run("server1", "ansible.builtin.copy", {"dest": f"{BASE}/a.conf", "content": "one\n"}, **CALL)
    assert result["changed"] is True, result
    assert fresh.last_route[0] >= 2  # stat(s), copy
    assert fresh.last_route[1] == 0
    assert fresh.last_steps["put"] == 1
    # echo ~root, the tmp dir's mkdir, its chmod and its rm: done by the agent with system calls, no shell
    assert fresh.last_steps["step"] == 4, fresh.last_steps
    assert fresh.last_steps["exec"] == 0, fresh.last_steps
    assert fresh.last_steps["standard"] == 0, fresh.last_steps
    assert ssh_clients == {"commands": 0, "transfers": 0}
    assert _host_file(on_host, f"{BASE}/a.conf") == "644 root " + hashlib.sha256(b"one\n").hexdigest()
    tmp_left = on_host("ls -A /root/.ansible/tmp").stdout.split()
    assert not [name for name in tmp_left if name.startswith("ansible-tmp-")], tmp_left

    # The same call on the standard path starts clients: the counters see them.
    standard.run("server1", "ansible.builtin.copy", {"dest": f"{BASE}/a.conf", "content": "two\n"}, **CALL)
    assert ssh_clients["transfers"] >= 1
    assert ssh_clients["commands"] >= 1


def test_tmp_dir_the_shell_must_expand__its_steps_run_in_a_shell(
    fresh: WarmExecutor, ssh_clients: dict[str, int], on_host: Any
) -> None:
    """A remote tmp dir with a space: the agent does not do the mkdir group itself, a shell does, the same copy."""
    tmp = f"{BASE}/with space/tmp"
    args = {"dest": f"{BASE}/spaced.conf", "content": "spaced\n"}
    result = fresh.run("server1", "ansible.builtin.copy", args, **CALL, task_vars={"ansible_remote_tmp": tmp})
    assert result["changed"] is True, result
    assert fresh.last_steps["exec"] == 1, fresh.last_steps  # the mkdir group
    assert fresh.last_steps["step"] == 2, fresh.last_steps  # chmod and rm of quoted paths (no ~ to expand)
    assert ssh_clients == {"commands": 0, "transfers": 0}
    assert _host_file(on_host, f"{BASE}/spaced.conf") == "644 root " + hashlib.sha256(b"spaced\n").hexdigest()
    assert on_host(f"ls -A '{tmp}'").stdout.split() == []  # made there, and removed


def test_template_and_fetch__through_the_agent(
    fresh: WarmExecutor, ssh_clients: dict[str, int], on_host: Any, tmp_path: Path
) -> None:
    source = tmp_path / "t.j2"
    source.write_text("name={{ inventory_hostname }}\n")
    result = fresh.run("server1", "ansible.builtin.template", {"src": str(source), "dest": f"{BASE}/t"}, **CALL)
    assert result["changed"] is True, result
    assert fresh.last_steps["put"] == 1
    on_host(f"printf 'remote\\n' > {BASE}/r; chmod 0640 {BASE}/r")
    fetched = fresh.run(
        "server1", "ansible.builtin.fetch", {"src": f"{BASE}/r", "dest": f"{tmp_path}/f", "flat": True}, **CALL
    )
    assert fetched["changed"] is True, fetched
    assert fresh.last_steps["fetch"] == 1
    assert fresh.last_steps["standard"] == 0
    assert ssh_clients == {"commands": 0, "transfers": 0}
    assert on_host(f"cat {BASE}/t").stdout == "name=server1\n"
    local = tmp_path / "f"
    assert local.read_bytes() == b"remote\n"
    # As an sftp download makes it: the remote mode, writable by its owner, less the umask.
    umask = os.umask(0)
    os.umask(umask)
    assert local.stat().st_mode & 0o777 == (0o640 | 0o200) & ~umask


def test_transfer_above_the_limit__standard_path_with_the_reason(
    fresh: WarmExecutor,
    ssh_clients: dict[str, int],
    on_host: Any,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="pytest_mh_ansible.modules")
    big = tmp_path / "big.bin"
    data = os.urandom(1 << 16) * ((warm_module._TRANSFER_LIMIT >> 16) + 1)  # 64 KiB more than the limit
    big.write_bytes(data)
    result = fresh.run("server1", "ansible.builtin.copy", {"src": str(big), "dest": f"{BASE}/big.bin"}, **CALL)
    assert result["changed"] is True, result
    assert fresh.last_steps["put"] == 0
    assert fresh.last_steps["standard"] == 1  # the transfer; the commands went through the agent
    assert ssh_clients == {"commands": 0, "transfers": 1}
    assert f"more than {warm_module._TRANSFER_LIMIT >> 20} MiB" in caplog.text
    assert "put_file on the standard path" in caplog.text
    assert _host_file(on_host, f"{BASE}/big.bin").endswith(hashlib.sha256(data).hexdigest())


def test_become_user__commands_as_the_login_user_module_as_root(
    fresh: WarmExecutor, ssh_clients: dict[str, int], on_host: Any
) -> None:
    """The lab user with sudo (a password): tmp dir and transfer as the lab user, the module as root."""
    args = {"dest": f"{BASE}/root-owned", "content": "by sudo\n", "mode": "0600"}
    options = {**CALL, "become": True}
    result = fresh.run("server1-user", "ansible.builtin.copy", args, **options)
    assert result["changed"] is True, result
    assert fresh.last_steps["standard"] == 0, fresh.last_steps
    assert fresh.last_steps["put"] == 1
    labels = sorted(label for label, _ in fresh.agents())
    assert labels == ["server1-user (labuser)", "server1-user (labuser, become sudo:root)"]
    assert ssh_clients["transfers"] == 0
    assert _host_file(on_host, f"{BASE}/root-owned") == "600 root " + hashlib.sha256(b"by sudo\n").hexdigest()


def test_raw_and_a_shell_of_its_own__standard_path(
    fresh: WarmExecutor, ssh_clients: dict[str, int], caplog: pytest.LogCaptureFixture
) -> None:
    """``raw`` with ``executable``: the standard path runs it through that shell; the reason is logged."""
    caplog.set_level(logging.INFO, logger="pytest_mh_ansible.modules")
    result = fresh.run("server1", "ansible.builtin.raw", {"_raw_params": "echo $0", "executable": "/bin/bash"}, **CALL)
    assert result["stdout"].strip() == "/bin/bash", result
    assert fresh.last_steps["standard"] == 1
    assert ssh_clients["commands"] == 1
    assert "the command names its own shell" in caplog.text


_COMPARED = ("changed", "failed", "dest", "checksum", "md5sum", "mode", "owner", "group", "size", "state")


@pytest.mark.parametrize(
    "connection",
    # paramiko where ansible-core still ships it (2.19, 2.20; removed in 2.21)
    ["paramiko"] * compat.paramiko_plugin_available() + ["local"],
)
def test_connections_without_agent_steps__standard_steps_same_result(
    warm_lab: Lab, tmp_path: Path, connection: str, on_host: Any
) -> None:
    """local (its steps are local processes already) and paramiko (no channel): the standard steps, the same copy."""
    import yaml

    root = yaml.safe_load(warm_lab.inventory_path.read_text())["all"]["hosts"]["server1"]
    if connection == "paramiko":
        variables = {
            key: root[key] for key in ("ansible_host", "ansible_user", "ansible_ssh_private_key_file") if key in root
        }
        variables.update(ansible_connection="paramiko", ansible_host_key_checking=False)
        dest = f"{BASE}/paramiko.conf"
    else:
        variables = {"ansible_connection": "local"}
        dest = str(tmp_path / "local.conf")
    variables["ansible_python_interpreter"] = "/usr/bin/python3"
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {"target": variables}}}))
    inventory = Inventory.load([str(path)])
    standard, warm = StandardExecutor(inventory), WarmExecutor(inventory)
    try:
        results = []
        for executor in (standard, warm):
            if connection == "paramiko":
                on_host(f"rm -f {dest}")
            else:
                Path(dest).unlink(missing_ok=True)
            result = executor.run("target", "ansible.builtin.copy", {"dest": dest, "content": "same\n"}, **CALL)
            results.append(
                {key: result.get(key) for key in _COMPARED}
                | {"diff": [(d.get("before"), d.get("after")) for d in result.get("diff", [])]}
            )
        assert results[0]["changed"] is True, results[0]
        assert results[1] == results[0]
        assert warm.last_steps["exec"] == warm.last_steps["put"] == 0
        assert warm.last_steps["standard"] >= 2  # at least the mkdir and the rm of the tmp dir
    finally:
        warm.close()
        standard.close()
