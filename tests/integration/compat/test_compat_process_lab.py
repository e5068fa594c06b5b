"""pytest-mh's live processes through a compatibility host's ``conn``, on a lab host.

A tiny pytest-mh-style suite (``pytest_mh`` imports only) runs with ``-p pytest_mh_ansible.compat.plugin``
once per Ansible connection of the host: ``ssh`` as root, ``ssh`` as the lab's user with sudo and
its password (become), ``paramiko`` (where ansible-core still has it) and ``local`` (the host is
this machine). Each run feeds ``cat`` through stdin and reads it back line by line, ends
``sleep`` with ``send_signal``, waits in ``with process:``, uses ``async_exec`` and a timeout;
afterwards no process of the suite may be left on the host.
"""

from __future__ import annotations

import getpass
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from compat_suite_text import conftest
from labname import lab_name

from pytest_mh_ansible._private.ansible.compat import paramiko_plugin_available
from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec, LabUserSpec

pytestmark = pytest.mark.integration

LAB_NAME = lab_name("mhproc")

CONNECTIONS = ["ssh", "ssh-become", *(["paramiko"] if paramiko_plugin_available() else []), "local"]
"""The connections of the host that the suite runs over (ansible-core 2.21 has no paramiko plugin)."""

CONFTEST = conftest("", "pass")

TESTS = textwrap.dedent("""
    import signal
    import time

    import pytest
    from pytest_mh import Topology, TopologyDomain, TopologyMark
    from pytest_mh.conn import Process, ProcessError, ProcessTimeoutError
    from pytest_mh.conn.ssh import SSHProcessError, SSHProcessTimeoutError

    ONE = TopologyMark(
        name="one",
        topology=Topology(TopologyDomain("default", client=1)),
        fixtures=dict(client="default.client[0]"),
    )
    TAG = {tag!r}  # in each command line, so that pgrep finds only this run's processes
    PATTERN = "[" + TAG[0] + "]" + TAG[1:]  # matches TAG, but not the command line of the pgrep command
    USER = {user!r}


    def left(client):
        return client.host.conn.run(f"pgrep -f -- '{{PATTERN}}'", raise_on_error=False).stdout_lines


    @pytest.mark.topology(ONE)
    def test_cat_fed_through_stdin(client):
        process = client.host.conn.async_run(f"id -un; cat  # {{TAG}}")
        assert isinstance(process, Process)
        assert next(process.stdout) == USER
        process.stdin.write("one\\n")
        assert next(process.stdout) == "one"
        process.stdin.write(b"two\\n")
        assert next(process.stdout) == "two"
        process.send_eof()
        result = process.wait()
        assert (result.rc, result.stdout_lines, result.stderr) == (0, [USER, "one", "two"], "")


    @pytest.mark.topology(ONE)
    def test_sleep_ended_by_send_signal(client):
        started = time.monotonic()
        process = client.host.conn.async_run(f"echo started; sleep 30  # {{TAG}}")
        assert next(process.stdout) == "started"
        assert left(client)
        process.send_signal(signal.SIGTERM)
        result = process.wait(raise_on_error=False)
        assert result.rc == 143
        assert time.monotonic() - started < 15
        assert left(client) == []


    @pytest.mark.topology(ONE)
    def test_with_process_waits(client):
        path = f"/tmp/mhproc-{{TAG}}"
        with client.host.conn.async_run(f"sleep 1; echo done > {{path}}  # {{TAG}}") as process:
            assert process.in_progress
        assert not process.in_progress
        assert client.host.conn.run(f"cat {{path}}; rm -f {{path}}").stdout == "done"
        with pytest.raises(ProcessError) as info, client.host.conn.async_run("echo bad >&2; exit 3"):
            pass
        assert (info.value.rc, info.value.stderr_lines) == (3, ["bad"])
        assert isinstance(info.value, SSHProcessError)  # as pytest-mh's host.conn (an SSHClient) raises
        with pytest.raises(SSHProcessError):
            client.host.conn.run("exit 4")


    @pytest.mark.topology(ONE)
    def test_async_exec_and_input(client):
        process = client.host.conn.async_exec(["printf", "%s|", "a b", "$HOME", TAG])
        assert process.wait().stdout == f"a b|$HOME|{{TAG}}|"
        assert client.host.conn.async_run("cat", input="given\\n").wait().stdout == "given"


    @pytest.mark.topology(ONE)
    def test_timeout_stops_the_command(client):
        process = client.host.conn.async_run(f"echo partial; sleep 30  # {{TAG}}")
        with pytest.raises(SSHProcessTimeoutError) as info:
            process.wait(timeout=2)
        assert info.value.stdout_lines == ["partial"]
        assert isinstance(info.value, ProcessTimeoutError)
        assert left(client) == []
""")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """client1, with the lab's user (sudo asks for its password)."""
    spec = LabSpec(name=LAB_NAME, hosts=(LabHostSpec("client1", roles=("client",)),), user=LabUserSpec())
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab


def _inventory(lab: Lab, connection: str, path: Path) -> tuple[Path, str]:
    """The lab's inventory with client1 reached over ``connection``; and the user its commands run as."""
    data: Any = yaml.safe_load(Path(lab.inventory_path).read_text())
    host = data["all"]["hosts"]["client1"]
    user = "root"
    if connection == "ssh-become":
        # Only root's key is authorized on lab hosts: the user logs in with its password.
        password = host["mh_lab_user_password"]
        host.update(ansible_user=host["mh_lab_user"], ansible_password=password, ansible_become=True)
    elif connection == "paramiko":
        # The lab pins host keys through ssh options, which paramiko does not read.
        host.update(ansible_connection="paramiko", ansible_host_key_checking=False)
    elif connection == "local":
        host.update(ansible_connection="local")
        user = getpass.getuser()
    path.write_text(yaml.safe_dump(data))
    return path, user


@pytest.mark.parametrize("connection", CONNECTIONS)
def test_compat_process__live_processes_through_a_compat_host(
    pytester: pytest.Pytester, lab: Lab, connection: str
) -> None:
    inventory, user = _inventory(lab, connection, pytester.path / "hosts.yml")
    tag = f"mhproc-{connection}-{pytester.path.name}"
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_process=TESTS.format(tag=tag, user=user))
    result = pytester.runpytest_subprocess(
        "-p",
        "pytest_mh_ansible.compat.plugin",
        f"--mh-inventory={inventory}",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-v",
    )
    text = result.stdout.str()
    outcomes = dict(re.findall(r"^test_process\.py::(\w+)\[one\] (PASSED|FAILED|ERROR|SKIPPED)", text, re.MULTILINE))
    assert len(outcomes) == 5, text
    assert set(outcomes.values()) == {"PASSED"}, text
