"""Commands and files over real Ansible connection plugins (ssh, paramiko, local) against a real sshd."""

from __future__ import annotations

import logging
import os
import re
import signal
import statistics
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from transport_helpers import connection

from pytest_mh_ansible._private.ansible import compat
from pytest_mh_ansible._private.ansible.transport import KILL_AFTER, AnsibleTransport
from pytest_mh_ansible.conn import Connection
from pytest_mh_ansible.errors import HostUnreachableError, ProcessError, ProcessTimeoutError

pytestmark = pytest.mark.integration

TargetHost = Any  # conftest.TargetHost; conftest modules are not imported by name

SSH_PLUGINS = ["ssh", "paramiko"] if compat.paramiko_plugin_available() else ["ssh"]
"""The ssh-based connection plugins of the installed ansible-core (2.21 removed paramiko)."""


@pytest.fixture(scope="module")
def root(target: TargetHost) -> Iterator[Connection]:
    """The target as root over the ssh plugin."""
    yield from connection(target.name, target.root_vars)


@pytest.fixture(scope="module")
def user(target: TargetHost) -> Iterator[Connection]:
    """The target as the non-root sudo user over the ssh plugin (become needs its password)."""
    yield from connection(f"{target.name}-user", target.user_vars)


@pytest.fixture(scope="module", params=[*SSH_PLUGINS, "ssh+agent"])
def any_ssh(request: pytest.FixtureRequest, target: TargetHost) -> Iterator[Connection]:
    """The non-root user over each ssh-based plugin, and over ssh through the command agent (sudo with a password)."""
    plugin, _, agent = str(request.param).partition("+")
    variables = {**target.user_vars, "ansible_connection": plugin}
    if plugin == "paramiko":  # the lab pins host keys through ssh options, which paramiko does not read
        variables["ansible_host_key_checking"] = False
    for conn in connection(f"{target.name}-{plugin}{agent}", variables, agent=bool(agent)):
        if agent:  # the agent starts in the background: the tests are for the commands it runs
            deadline = time.monotonic() + 15
            while conn.run("grep -c 'mh-warm-agen[t]' /proc/$PPID/cmdline", raise_on_error=False).rc != 0:
                assert time.monotonic() < deadline, "commands do not run under the agent"
                time.sleep(0.05)
        yield conn


@pytest.fixture(scope="module")
def local() -> Iterator[Connection]:
    yield from connection("localhost", {"ansible_connection": "local"})


def test_run__rc_stdout_stderr_separate_without_cr(any_ssh: Connection) -> None:
    result = any_ssh.run("echo out; echo err >&2; exit 3", raise_on_error=False)
    assert (result.rc, result.stdout, result.stderr) == (3, "out\n", "err\n")


def test_run__stdin_is_empty_without_input(any_ssh: Connection) -> None:
    assert any_ssh.run("cat", timeout=20).stdout == ""


def test_run__input(any_ssh: Connection) -> None:
    text = "line 1\nline 'two' $HOME\n" * 1000
    assert any_ssh.run("cat", input=text).stdout == text


def test_run__env_and_cwd(any_ssh: Connection) -> None:
    result = any_ssh.run('pwd; printf "%s\\n" "$MH_A" "$MH_B"', env={"MH_A": "a b", "MH_B": "$(id)'"}, cwd="/tmp")
    assert result.stdout_lines == ["/tmp", "a b", "$(id)'"]


@pytest.mark.parametrize("become", [False, True], ids=["plain", "become"])
def test_run__exit_255_is_the_commands_code(any_ssh: Connection, become: bool) -> None:
    # The ssh plugin alone would call this a connection failure.
    result = any_ssh.run("echo out; echo err >&2; exit 255", raise_on_error=False, become=become)
    assert (result.rc, result.stdout, result.stderr) == (255, "out\n", "err\n")
    assert any_ssh.run("exit 254", raise_on_error=False).rc == 254


def test_run__raise_on_error(any_ssh: Connection) -> None:
    with pytest.raises(ProcessError) as info:
        any_ssh.run("echo nope >&2; exit 7")
    assert info.value.rc == 7
    assert info.value.stderr == "nope\n"
    assert any_ssh.run("exit 7", raise_on_error=False).rc == 7


@pytest.mark.parametrize("become", [False, True], ids=["plain", "become"])
def test_run__timeout_kills_remote_process(any_ssh: Connection, become: bool) -> None:
    digits = f"{uuid.uuid4().int % 10**9:09d}"  # a unique duration marks the processes: sh -c and its sleep
    started = time.monotonic()
    with pytest.raises(ProcessTimeoutError) as info:
        any_ssh.run(f"sh -c 'sleep 120.{digits}; echo done'", timeout=2, become=become)
    elapsed = time.monotonic() - started
    assert 2 <= elapsed < 2 + 5, elapsed
    assert info.value.timeout == 2
    left = any_ssh.run(f"pgrep -af 'sleep 12[0].{digits}'", raise_on_error=False)
    assert left.rc == 1, left.stdout
    assert any_ssh.run("echo still usable").stdout == "still usable\n"


def test_run__timeout_safety_net_when_output_stays_open(any_ssh: Connection) -> None:
    """A process that escapes ``timeout`` (new session) and holds stdout: the connection is dropped instead."""
    digits = f"{uuid.uuid4().int % 10**9:09d}"  # a unique duration marks the escaped process
    started = time.monotonic()
    try:
        with pytest.raises(ProcessTimeoutError):
            any_ssh.run(f"setsid sleep 60.{digits} & sleep 60", timeout=1)
        assert time.monotonic() - started < 1 + KILL_AFTER + 5 + 5
        assert any_ssh.run("echo reconnected").stdout == "reconnected\n"
    finally:
        pids = any_ssh.run(f"pgrep -f 'sleep 6[0].{digits}'", raise_on_error=False).stdout.split()
        assert pids, "the escaped process should still be there to be cleaned up"
        any_ssh.run(f"kill {' '.join(pids)}")


def test_put_get__binary_roundtrip(any_ssh: Connection, tmp_path: Path) -> None:
    data = bytes(range(256)) * 64 + os.urandom(100_000)
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    remote = f"/tmp/mh-roundtrip-{uuid.uuid4().hex}.bin"
    try:
        any_ssh.put(src, remote)
        assert any_ssh.run(f"wc -c < {remote}").stdout.strip() == str(len(data))
        any_ssh.get(remote, tmp_path / "back.bin")
        assert (tmp_path / "back.bin").read_bytes() == data
    finally:
        any_ssh.run(f"rm -f {remote}", raise_on_error=False)


def test_become__root_from_user_with_password(any_ssh: Connection, target: TargetHost) -> None:
    assert any_ssh.run("id -un").stdout == f"{target.user}\n"
    result = any_ssh.run("id -un; echo err >&2", become=True)
    assert (result.stdout, result.stderr) == ("root\n", "err\n")
    assert any_ssh.run("cat", input="via sudo\n", become=True).stdout == "via sudo\n"
    assert any_ssh.run("id -un", become_user="nobody").stdout == "nobody\n"


def test_become__as_root_skips_sudo(root: Connection) -> None:
    # As ActionBase: become from root to root runs the command as it is (no sudo on the target needed).
    assert root.run("id -un", become=True).stdout == "root\n"
    assert root.run("id -un", become_user="nobody").stdout == "nobody\n"


def test_become__host_default_applies_unless_forced_off(target: TargetHost) -> None:
    for conn in connection("become-default", {**target.user_vars, "ansible_become": True}):
        assert conn.run("id -un").stdout == "root\n"
        assert conn.run("id -un", become=False).stdout == f"{target.user}\n"


def test_become__wrong_password_fails_fast_and_masked(target: TargetHost) -> None:
    wrong = "Wr0ng-become-pw-77"
    for conn in connection("wrong-become", {**target.user_vars, "ansible_become_password": wrong}):
        started = time.monotonic()
        with pytest.raises(ProcessError) as info:
            conn.run("id -un", become=True, timeout=30)
        assert time.monotonic() - started < 10
        assert wrong not in str(info.value)
        assert "password" in str(info.value).lower()


def test_secrets_never_in_process_error(user: Connection, target: TargetHost) -> None:
    with pytest.raises(ProcessError) as info:
        user.run(f"echo {target.user_password}; echo {target.user_password} >&2; exit 1")
    text = str(info.value)
    assert target.user_password not in text
    assert target.user_password not in info.value.command
    assert "********" in text


@pytest.mark.parametrize("plugin", SSH_PLUGINS)
def test_connect__wrong_ssh_password_is_unreachable(target: TargetHost, plugin: str) -> None:
    wrong = "Wr0ng-ssh-pw-1234"
    variables = {key: value for key, value in target.user_vars.items() if key != "ansible_ssh_private_key_file"} | {
        "ansible_connection": plugin,
        "ansible_password": wrong,
        "ansible_ssh_extra_args": "-o PubkeyAuthentication=no -o IdentitiesOnly=yes",
        "ansible_paramiko_look_for_keys": False,
        "ansible_host_key_checking": False,
    }
    # A ControlPath shared through the inventory (the lab sets one) would reuse the user's open master.
    variables["ansible_ssh_common_args"] = re.sub(r"-o ControlPath=\S+", "", variables["ansible_ssh_common_args"])
    started = time.monotonic()
    for conn in connection("wrong-ssh-pw", variables):
        with pytest.raises(HostUnreachableError) as info:
            conn.run("true")
        assert wrong not in str(info.value)
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("plugin", SSH_PLUGINS)
def test_connect__closed_port_is_unreachable(unused_port: int, plugin: str) -> None:
    variables = {
        "ansible_connection": plugin,
        "ansible_host": "127.0.0.1",
        "ansible_port": unused_port,
        "ansible_user": "root",
        "ansible_host_key_checking": False,
    }
    started = time.monotonic()
    for conn in connection("nowhere", variables):
        with pytest.raises(HostUnreachableError) as info:
            conn.run("true")
        assert "nowhere" in str(info.value)
    assert time.monotonic() - started < 10


def test_local__run_input_timeout(local: Connection) -> None:
    result = local.run("echo out; echo err >&2; cat", input=b"in\n", raise_on_error=False)
    assert (result.rc, result.stdout, result.stderr) == (0, "out\nin\n", "err\n")
    with pytest.raises(ProcessTimeoutError):
        local.run("sleep 30", timeout=1)


def _master_pid(socket_path: str) -> int | None:
    check = subprocess.run(
        ["ssh", "-o", f"ControlPath={socket_path}", "-O", "check", "unused"],
        capture_output=True,
        text=True,
        check=False,
    )
    match = re.search(r"pid=(\d+)", check.stderr)
    return int(match.group(1)) if match else None


def test_close__leaves_no_control_master(target: TargetHost) -> None:
    transport = AnsibleTransport("cp-check", target.root_vars)
    transport.exec("true")
    socket_path = transport.control_socket()
    assert socket_path is not None
    assert not socket_path.startswith(os.path.expanduser("~/.ansible/cp"))
    pid = _master_pid(socket_path)
    assert pid is not None, "a ControlMaster should serve the session"
    private_dir = transport.control_path_dir
    transport.close()
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists()
    assert not os.path.exists(socket_path)
    assert private_dir is None or not os.path.exists(private_dir)


def test_latency__commands_reuse_one_connection(any_ssh: Connection, record_property: Any) -> None:
    """What keeps a raw command fast: 100 commands share one ssh connection (and, with the agent, one agent).

    The time itself is a benchmark's figure, not a test's bound (a loaded CI machine would make any
    bound either flaky or meaningless): ``bench/raw_idle.py`` measures it, with its JSON committed in
    bench/results/ and cited in docs/performance.md (4.2 ms through the agent, 12 ms with an ssh client
    per command, back to back, on 7 Dec). The median here is kept as a JUnit property, for the record.
    """
    probe = 'echo "${SSH_CONNECTION%% *} ${SSH_CONNECTION#* }" $PPID'
    first = any_ssh.run(probe).stdout.split()
    seen = set()
    times = []
    for _ in range(100):
        started = time.perf_counter()
        seen.add(tuple(any_ssh.run(probe).stdout.split()))
        times.append(time.perf_counter() - started)
    record_property("median_ms", statistics.median(times) * 1000)
    # SSH_CONNECTION is "client-address client-port server-address server-port": one client port, one TCP
    # connection (a ControlMaster, paramiko's session, the agent's channel), not a handshake per command.
    assert {words[1] for words in seen} == {first[1]}, f"commands came over {len(seen)} connections: {sorted(seen)}"
    if any_ssh.host.endswith("agent"):  # and each command is a child of the one agent, not of a new shell
        assert {words[-1] for words in seen} == {first[-1]}, f"commands ran under several parents: {sorted(seen)}"


def test_ansible_leaves_pytest_alone(target: TargetHost, capfd: pytest.CaptureFixture[str], caplog: Any) -> None:
    """No Display output (paramiko's deprecation goes to our log), fds 0-2 and signal handlers untouched."""
    inheritable = [os.get_inheritable(fd) for fd in (0, 1, 2)]
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)}
    if compat.paramiko_plugin_available():
        variables = {**target.root_vars, "ansible_connection": "paramiko", "ansible_host_key_checking": False}
        with caplog.at_level(logging.DEBUG, logger="pytest_mh_ansible.conn"):
            for conn in connection("quiet", variables):
                conn.run("true")
        assert "paramiko connection plugin is deprecated" in caplog.text
    for conn in connection("quiet-ssh", target.root_vars):
        conn.run("true")
    out, err = capfd.readouterr()
    assert "WARNING" not in out + err
    assert [os.get_inheritable(fd) for fd in (0, 1, 2)] == inheritable
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers


def test_connect__paramiko_works_or_says_it_was_removed(target: TargetHost) -> None:
    """Up to ansible-core 2.20 paramiko connects; on 2.21, which removed it, the error says so and names ssh."""
    variables = {**target.root_vars, "ansible_connection": "paramiko", "ansible_host_key_checking": False}
    for conn in connection("paramiko-check", variables):
        if compat.paramiko_plugin_available():
            assert conn.run("echo ok").stdout == "ok\n"
        else:
            with pytest.raises(HostUnreachableError, match=r"paramiko-check.*'paramiko' was not found.*2\.21.*ssh"):
                conn.run("true")
