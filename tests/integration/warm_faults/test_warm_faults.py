"""The warm executor under faults: a killed agent, a restarted sshd, the end of a session."""

from __future__ import annotations

import logging
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fault_helpers import agent_pids

from pytest_mh_ansible import HostUnreachableError
from pytest_mh_ansible._private.ansible import compat
from pytest_mh_ansible._private.ansible.executor import StandardExecutor
from pytest_mh_ansible._private.ansible.inventory import Inventory
from pytest_mh_ansible._private.ansible.warm import WarmExecutor
from pytest_mh_ansible.lab import Lab

CALL: dict[str, Any] = dict(check=False, diff=False, become=None, become_user=None, no_log=False, template=False)


@pytest.fixture
def warm(inventory: Inventory) -> Iterator[WarmExecutor]:
    executor = WarmExecutor(inventory)
    yield executor
    executor.close()


def _ping(executor: StandardExecutor) -> dict[str, Any]:
    return executor.run("server1", "ansible.builtin.ping", {}, **CALL)


def _wait_for(condition: Any, timeout: float = 10.0, shown: Any = None) -> None:
    """Wait for ``condition``; on timeout, the failure shows what ``shown()`` returns (the host's processes)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out{f': {shown()}' if shown is not None else ''}"
        time.sleep(0.05)


def test_agent_killed_mid_call__call_fails_clearly_then_restart_once_then_standard(
    warm: WarmExecutor, fault_lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pytest_mh_ansible.modules")
    assert _ping(warm)["ping"] == "pong"
    assert warm.last_route == (1, 0)
    first_pid = warm.agents()[0][1]

    results: list[dict[str, Any]] = []
    worker = threading.Thread(
        target=lambda: results.append(warm.run("server1", "ansible.builtin.command", {"cmd": "sleep 20"}, **CALL))
    )
    started = time.monotonic()
    worker.start()
    _wait_for(lambda: "sleep 20" in fault_lab.run_inside("server1", "ps -eo args").stdout)
    assert fault_lab.run_inside("server1", f"kill -9 {first_pid}").returncode == 0
    worker.join(30)
    assert not worker.is_alive()
    assert time.monotonic() - started < 15  # not the module's 20 s: the call ended with the agent
    result = results[0]
    assert result["failed"] is True
    assert result["rc"] == 137
    assert "warm agent on server1 (root) ended during this module call" in result["module_stderr"]
    assert "the module may have run" in result["module_stderr"]
    # The module's own process died with the agent (what it started may live on, as with a killed python3).
    _wait_for(lambda: agent_pids(fault_lab) == [])

    # Restarted once: a new agent serves the next call.
    assert _ping(warm)["ping"] == "pong"
    assert warm.last_route == (1, 0)
    second_pid = warm.agents()[0][1]
    assert second_pid != first_pid

    # Killed again (idle this time): the call still succeeds, on the standard path from now on.
    assert fault_lab.run_inside("server1", f"kill -9 {second_pid}").returncode == 0
    _wait_for(lambda: second_pid not in agent_pids(fault_lab))
    assert _ping(warm)["ping"] == "pong"
    assert warm.last_route == (0, 1)
    assert "standard path from now on" in caplog.text
    assert _ping(warm)["ping"] == "pong"
    assert warm.last_route == (0, 1)
    assert warm.agents() == []


def test_agent_killed_while_idle__next_call_restarts_it_and_succeeds(warm: WarmExecutor, fault_lab: Lab) -> None:
    assert _ping(warm)["ping"] == "pong"
    pid = warm.agents()[0][1]
    assert fault_lab.run_inside("server1", f"kill -9 {pid}").returncode == 0
    result = warm.run("server1", "ansible.builtin.command", {"cmd": "echo after"}, **CALL)
    assert result["stdout"] == "after"
    assert warm.last_route == (1, 0)
    assert warm.agents()[0][1] != pid


def test_sshd_restarted__every_ssh_session_dropped__next_call_succeeds(warm: WarmExecutor, fault_lab: Lab) -> None:
    assert _ping(warm)["ping"] == "pong"
    pid = warm.agents()[0][1]
    # Kill every sshd process (the listener, the ControlMaster's session, the agent's session), start a new one.
    restarted = fault_lab.run_inside("server1", "pkill -x sshd; sleep 0.3; /usr/sbin/sshd")
    assert restarted.returncode == 0, restarted.stderr
    # The agent ends with its session.
    _wait_for(
        lambda: pid not in agent_pids(fault_lab),
        shown=lambda: fault_lab.run_inside("server1", "ps -eo pid,ppid,stat,etime,args").stdout,
    )
    result = warm.run("server1", "ansible.builtin.stat", {"path": "/etc/hostname"}, **CALL)
    assert result["stat"]["exists"] is True
    assert warm.last_route == (1, 0)
    assert warm.agents()[0][1] != pid


def _temp_dirs(lab: Lab) -> set[str]:
    found = lab.run_inside("server1", "ls -d /tmp/mh-warm-* /tmp/ansible_*_payload_* 2>/dev/null || true")
    return set(found.stdout.split())


def test_close__no_agent_and_no_temp_files_left_on_the_target(warm: WarmExecutor, fault_lab: Lab) -> None:
    before = _temp_dirs(fault_lab)
    for module, args in [("ansible.builtin.ping", {}), ("ansible.builtin.command", {"cmd": "true"})]:
        warm.run("server1", module, args, **CALL)
    warm.run("server1", "ansible.builtin.command", {"cmd": "id -un"}, **{**CALL, "become_user": "nobody"})
    assert len(warm.agents()) == 2  # root, and root becoming nobody
    assert len(agent_pids(fault_lab)) >= 2
    warm.close()
    assert agent_pids(fault_lab) == []
    # (Agents SIGKILLed by earlier tests may have left theirs: a new agent removes those.)
    assert not {path for path in _temp_dirs(fault_lab) - before if "/mh-warm-" in path or "_payload_" in path}
    assert not [path for path in _temp_dirs(fault_lab) if path.startswith("/tmp/mh-warm-")]


SUITE = """
import pytest
from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

SERVER = TopologyMark(
    "server", Topology(TopologyDomain("default", server=1)), fixtures=dict(server="default.server[0]")
)

@pytest.mark.topology(SERVER)
def test_write(server):
    server.fs.write("/etc/mh-warm-suite.conf", "x = 1\\n")
    assert server.host.ansible.run("ansible.builtin.slurp", src="/etc/mh-warm-suite.conf").raw["content"] == "eCA9IDEK"
"""


@pytest.mark.parametrize(
    ("option", "host_var", "expect_agent"),
    [
        pytest.param("--mh-executor=warm", None, True, id="option-warm"),
        pytest.param("--mh-executor=standard", None, False, id="option-standard"),
        pytest.param(None, None, True, id="default"),
        pytest.param("--mh-executor=warm", "standard", False, id="host-var-standard"),
    ],
)
def test_session__executor_choice_and_nothing_left_running(
    pytester: pytest.Pytester, fault_lab: Lab, option: str | None, host_var: str | None, expect_agent: bool
) -> None:
    pytester.makepyfile(test_suite=textwrap.dedent(SUITE))
    args = [f"--mh-inventory={fault_lab.inventory_path}", "-p", "no:cacheprovider", "--log-level=INFO"]
    if host_var is not None:
        extra = pytester.path / "extra.yml"
        extra.write_text(f"all:\n  hosts:\n    server1:\n      mh_executor: {host_var}\n")
        args.append(f"--mh-inventory={extra}")
    if option is not None:
        args.append(option)
    result = pytester.runpytest_subprocess(*args, "-rA", timeout=240)
    output = result.stdout.str()
    result.assert_outcomes(passed=1)
    assert ("warm agent started" in output) is expect_agent, output
    assert "standard path" not in output, output
    assert agent_pids(fault_lab) == []
    assert fault_lab.run_inside("server1", "test -e /etc/mh-warm-suite.conf; echo $?").stdout.strip() == "1"


def _without_timing(result: dict[str, Any]) -> dict[str, Any]:
    """What differs between any two runs, whatever runs them: command's start/end/delta, and a
    file's atime (the first read after a change moves it: stat's mime check reads the file)."""
    kept = {key: value for key, value in result.items() if key not in ("start", "end", "delta")}
    if "stat" in kept:
        kept["stat"] = {key: value for key, value in kept["stat"].items() if key != "atime"}
    return kept


@pytest.mark.parametrize(
    ("connection", "route"),
    # paramiko where ansible-core still ships it (2.19, 2.20; removed in 2.21)
    [("paramiko", (0, 1))] * compat.paramiko_plugin_available() + [("local", (1, 0))],
)
def test_connection_plugins__local_served_warm_paramiko_falls_back(
    fault_lab: Lab, tmp_path: Any, connection: str, route: tuple[int, int], caplog: pytest.LogCaptureFixture
) -> None:
    """local: the agent is a local process. paramiko cannot pipeline: its modules run from files, standard."""
    caplog.set_level(logging.INFO, logger="pytest_mh_ansible.modules")
    import yaml

    root = yaml.safe_load(fault_lab.inventory_path.read_text())["all"]["hosts"]["server1"]
    if connection == "paramiko":
        variables = {
            key: root[key] for key in ("ansible_host", "ansible_user", "ansible_ssh_private_key_file") if key in root
        }
        variables.update(ansible_connection="paramiko", ansible_host_key_checking=False)
    else:
        variables = {"ansible_connection": "local"}
    variables["ansible_python_interpreter"] = "/usr/bin/python3"
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {"target": variables}}}))
    inventory = Inventory.load([str(path)])
    standard, warm = StandardExecutor(inventory), WarmExecutor(inventory)
    try:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("ansible.builtin.command", {"cmd": "sh -c 'echo $PWD; id -un; echo err >&2; exit 3'"}),
            ("ansible.builtin.stat", {"path": "/etc/hostname", "get_checksum": False}),  # reading would move atime
        ]
        for module, args in calls:
            expected = _without_timing(standard.run("target", module, args, **CALL))
            got = _without_timing(warm.run("target", module, args, **CALL))
            assert warm.last_route == route
            assert got == expected
        assert len(warm.agents()) == route[0]
        assert ("the connection does not pipeline (paramiko" in caplog.text) is (connection == "paramiko")
    finally:
        warm.close()
        standard.close()
    assert warm.agents() == []


def test_package_change__agents_renewed_only_when_a_file_they_loaded_changed(
    warm: WarmExecutor, fault_lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    """An agent's imports reflect the packages installed when it started: a package change that
    touches a file it loaded (a module, a library, a ``sys.path`` directory) renews it; one that
    touches none (``tree``: a binary and its docs) keeps it, and saves the next call a new agent."""
    apt = {"name": "tree", "update_cache": False}
    caplog.set_level(logging.DEBUG, logger="pytest_mh_ansible.modules")
    assert _ping(warm)["ping"] == "pong"
    pid = warm.agents()[0][1]
    try:
        assert warm.run("server1", "ansible.builtin.apt", {**apt, "state": "present"}, **CALL)["changed"] is True
        assert warm.last_route == (1, 0)
        assert [agent_pid for _, agent_pid in warm.agents()] == [pid]
        assert "warm agent kept after a package change: nothing it loaded changed" in caplog.text
        # A package that adds a Python module changes a directory of sys.path: what the agent found
        # (or did not find) there at start-up may be stale, so it is replaced.
        assert fault_lab.run_inside("server1", "touch /usr/lib/python3/dist-packages").returncode == 0
        assert warm.run("server1", "ansible.builtin.apt", {**apt, "state": "absent"}, **CALL)["changed"] is True
        assert warm.agents() == []
        assert "warm agent renewed after a package change (/usr/lib/python3/dist-packages changed)" in caplog.text
        assert _ping(warm)["ping"] == "pong"
        assert warm.agents()[0][1] != pid
        pid = warm.agents()[0][1]
        # Unchanged (already absent): no check, the agent stays.
        assert warm.run("server1", "ansible.builtin.apt", {**apt, "state": "absent"}, **CALL)["changed"] is False
        assert warm.agents()[0][1] == pid
    finally:
        warm.run("server1", "ansible.builtin.apt", {**apt, "state": "absent"}, **CALL)


def test_packages_changed__a_removal_by_command_renews_the_agent_that_loaded_a_changed_file(
    warm: WarmExecutor, fault_lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    """The rollback purges a test's packages with ``apt-get``, not the module: it tells the executor,
    which checks the agents as after a package module's change."""
    caplog.set_level(logging.DEBUG, logger="pytest_mh_ansible.modules")
    apt = {"name": "tree", "update_cache": False}
    assert warm.run("server1", "ansible.builtin.apt", {**apt, "state": "present"}, **CALL)["changed"] is True
    pid = warm.agents()[0][1]
    try:
        warm.packages_changed("server1")  # nothing the agent loaded changed: kept
        assert [agent_pid for _, agent_pid in warm.agents()] == [pid]
        purge = "touch /usr/lib/python3/dist-packages && DEBIAN_FRONTEND=noninteractive apt-get -q -y purge tree"
        assert fault_lab.run_inside("server1", purge).returncode == 0
        assert [agent_pid for _, agent_pid in warm.agents()] == [pid]  # the executor did not see it
        warm.packages_changed("server1")
        assert warm.agents() == []
        assert "warm agent renewed after a package change (/usr/lib/python3/dist-packages changed)" in caplog.text
        assert _ping(warm)["ping"] == "pong"
    finally:
        warm.run("server1", "ansible.builtin.apt", {**apt, "state": "absent"}, **CALL)


class _Interrupted(BaseException):
    """Like KeyboardInterrupt: not caught by Ansible's TaskExecutor."""


def test_interrupted_call__module_killed_agent_replaced_without_counting_a_loss(
    warm: WarmExecutor, fault_lab: Lab
) -> None:
    """What a test timeout or Ctrl-C does: an exception in the waiting controller, twice in a row."""
    import signal

    def interrupt(signum: int, frame: Any) -> None:
        raise _Interrupted

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        for _ in range(2):
            signal.setitimer(signal.ITIMER_REAL, 1.5)
            with pytest.raises(_Interrupted):
                warm.run("server1", "ansible.builtin.command", {"cmd": "sleep 30"}, **CALL)
            signal.setitimer(signal.ITIMER_REAL, 0)
            _wait_for(lambda: agent_pids(fault_lab) == [])  # the agent killed the module and left
            assert warm.agents() == []
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert _ping(warm)["ping"] == "pong"
    assert warm.last_route == (1, 0)  # still warm: interruptions are not losses


def test_controller_gone__agent_exits_when_its_channel_ends(warm: WarmExecutor, fault_lab: Lab) -> None:
    """pytest killed: its ssh client dies, the agent's stdin ends, the agent exits."""
    import os
    import signal

    assert _ping(warm)["ping"] == "pong"
    assert agent_pids(fault_lab) != []
    channels = [slot.agent.channel for slot in warm._pool._slots.values() if slot.agent is not None]
    assert len(channels) == 1
    os.kill(channels[0].pid, signal.SIGKILL)  # type: ignore[attr-defined]
    _wait_for(lambda: agent_pids(fault_lab) == [])


def test_sshd_killed_during_a_call__host_unreachable_not_a_module_failure(warm: WarmExecutor, fault_lab: Lab) -> None:
    """The warm path reports a lost host as the standard path does: unreachable (a HostUnreachableError)."""
    assert _ping(warm)["ping"] == "pong"
    outcome: dict[str, Any] = {}

    def call() -> None:
        try:
            outcome["result"] = warm.run("server1", "ansible.builtin.command", {"cmd": "sleep 30"}, **CALL)
        except BaseException as err:
            outcome["error"] = err

    caller = threading.Thread(target=call)
    caller.start()
    try:
        _wait_for(lambda: "sleep 30" in fault_lab.run_inside("server1", "ps -eo args").stdout)
        assert fault_lab.run_inside("server1", "pkill -x sshd").returncode == 0
        caller.join(timeout=60)
        assert not caller.is_alive()
        error = outcome.get("error")
        assert isinstance(error, HostUnreachableError), outcome
        assert error.host == "server1"
        assert "deserialization" not in str(error)
    finally:
        caller.join(timeout=60)
        assert fault_lab.run_inside("server1", "pkill -x sshd; sleep 0.3; /usr/sbin/sshd").returncode == 0
        fault_lab.run_inside("server1", "pkill -x sleep; true")


DEAD_SUITE = """
import subprocess
import time

import pytest
from pytest_mh_ansible import HostUnreachableError, Topology, TopologyDomain, TopologyMark

SERVER = TopologyMark(
    "server", Topology(TopologyDomain("default", server=1)), fixtures=dict(server="default.server[0]")
)

@pytest.mark.topology(SERVER)
def test_lost(server):
    server.fs.write("/etc/mh-warm-lost.conf", "x\\n")
    killer = subprocess.Popen(["sh", "-c", "sleep 2; nsenter -t {pid} -a pkill -x sshd"])
    try:
        with pytest.raises(HostUnreachableError):
            server.host.ansible.run("ansible.builtin.command", cmd="sleep 30")
    finally:
        killer.wait()
    started = time.monotonic()
    with pytest.raises(HostUnreachableError, match="earlier in this session"):
        server.host.ansible.run("ansible.builtin.ping")  # marked dead at once: no second timeout
    assert time.monotonic() - started < 1
"""


def test_session__sshd_killed_during_a_call__host_marked_dead_at_once(
    pytester: pytest.Pytester, fault_lab: Lab
) -> None:
    pid = next(h.pid for h in fault_lab.hosts if h.name == "server1")
    pytester.makepyfile(test_dead=textwrap.dedent(DEAD_SUITE).replace("{pid}", str(pid)))
    try:
        # The dead host keeps the run's lease: a short TTL, so that a later run on this lab waits seconds for it.
        result = pytester.runpytest_subprocess(
            f"--mh-inventory={fault_lab.inventory_path}", "-p", "no:cacheprovider", "-p", "no:randomly",
            "--mh-lease-ttl=3", timeout=240,
        )  # fmt: skip
        output = result.stdout.str()
        # The test itself passes; its rollback cannot reach the host and says so.
        assert result.parseoutcomes().get("passed") == 1, output
        assert "could not revert" in output or "unreachable" in output, output
    finally:
        assert fault_lab.run_inside("server1", "pkill -x sshd; sleep 0.3; /usr/sbin/sshd").returncode == 0
        fault_lab.run_inside("server1", "pkill -x sleep; rm -f /etc/mh-warm-lost.conf; true")
