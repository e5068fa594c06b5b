"""The warm executor's controller-side decisions, without a target."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_mh_ansible._private.ansible.executor_choice import executor_for_host
from pytest_mh_ansible._private.ansible.warm import _BOOT, _Command, _runs_module_file


@pytest.mark.parametrize(
    ("cmd", "interpreter", "env_add"),
    [
        ("/usr/bin/python3", "/usr/bin/python3", {}),
        ("LANG=C FOO='a b' /usr/bin/python3.11", "/usr/bin/python3.11", {"LANG": "C", "FOO": "a b"}),
        ("python3", "python3", {}),
    ],
)
def test_command_parse__interpreter_and_task_environment(cmd: str, interpreter: str, env_add: dict[str, str]) -> None:
    parsed = _Command.parse(cmd)
    assert isinstance(parsed, _Command)
    assert (parsed.interpreter, parsed.env_add) == (interpreter, env_add)


@pytest.mark.parametrize(
    ("cmd", "reason"),
    [
        ("/usr/bin/env python3", "the interpreter is a command with arguments"),
        ("/usr/bin/python3 -E", "the interpreter is a command with arguments"),
        ("'unclosed", "cannot be parsed"),
        ("", "an empty module command"),
        ("bin/python3", "an unusual interpreter"),
    ],
)
def test_command_parse__what_cannot_be_served_warm(cmd: str, reason: str) -> None:
    parsed = _Command.parse(cmd)
    assert isinstance(parsed, str)
    assert reason in parsed


@pytest.mark.parametrize(
    ("cmd", "expected"),
    [
        ("/usr/bin/python3 /root/.ansible/tmp/ansible-tmp-1/AnsiballZ_ping.py", True),
        ("LANG=C /usr/bin/python3 /tmp/x/AnsiballZ_copy.py", True),
        ("chmod u+x /root/.ansible/tmp/ansible-tmp-1/AnsiballZ_ping.py", False),
        ("rm -f -r /root/.ansible/tmp/ansible-tmp-1/ > /dev/null 2>&1", False),
        ("/usr/bin/python3", False),
    ],
)
def test_runs_module_file__only_the_interpreter_running_a_payload_file(cmd: str, expected: bool) -> None:
    assert _runs_module_file(cmd) is expected


def test_executor_for_host__variable_wins_over_the_session_default() -> None:
    assert executor_for_host({}, "warm", host="h1") == "warm"
    assert executor_for_host({}, "standard", host="h1") == "standard"
    assert executor_for_host({"mh_executor": "Standard "}, "warm", host="h1") == "standard"
    assert executor_for_host({"mh_executor": "warm"}, "standard", host="h1") == "warm"


def test_executor_for_host__bad_value_names_host_and_value() -> None:
    with pytest.raises(ValueError, match=r"host h1: mh_executor='fast' is not 'warm' or 'standard'"):
        executor_for_host({"mh_executor": "fast"}, "warm", host="h1")


def test_boot_reader__skips_lines_before_the_header_and_runs_exactly_the_source(tmp_path: Path) -> None:
    """The reader that starts every agent: a sudo password line or a become marker may come first."""
    source = b"import os\nos.write(1, b'ran:' + os.read(0, 5))\n"
    stdin = b"password-line\nBECOME-SUCCESS-x\nMHWARM %d\n" % len(source) + source + b"after"
    done = subprocess.run([sys.executable, "-c", _BOOT], input=stdin, capture_output=True, timeout=30, check=False)
    assert (done.returncode, done.stdout) == (0, b"ran:after")


def test_boot_reader__end_of_input_before_the_header_exits_3() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _BOOT], input=b"no header\n", capture_output=True, timeout=30, check=False
    )
    assert done.returncode == 3
