"""Fixtures of the lab's integration tests: one session-wide lab, and helpers to run commands in it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec, LabUserSpec

# One lab per xdist worker: lab names must differ for labs to coexist.
LAB_NAME = lab_name("mhlabt")
USER = "labuser"
# Small packages that the machine itself does not have: installed from the lab's offline cache.
PACKAGES = ("tree", "nginx")


@pytest.fixture(scope="session")
def lab_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private parent for the test labs' directories (the package cache stays shared)."""
    return tmp_path_factory.mktemp("labs")


@pytest.fixture(scope="session")
def lab(lab_root: Path) -> Iterator[Lab]:
    """A lab of two sysv hosts and one systemd host, with a sudo user, root password and packages."""
    spec = LabSpec(
        name=LAB_NAME,
        hosts=(
            LabHostSpec("client1", roles=("client",)),
            LabHostSpec("server1", roles=("server", "web"), vars={"mh_domain": "app"}),
            LabHostSpec("server2", roles=("server",), init="systemd"),
        ),
        packages=PACKAGES,
        user=LabUserSpec(USER),
        password=True,
    )
    with Lab(spec, lab_root / LAB_NAME) as running:
        yield running


def _ssh(lab: Lab, host: str, command: str, *, check: bool = True, timeout: float = 120) -> str:
    """Run a command on a lab host as root, by key, through the lab's ssh_config."""
    proc = subprocess.run(
        ["ssh", "-F", str(lab.ssh_config_path), host, command],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"{host}: {command!r} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def _ansible(lab: Lab, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run an ansible CLI (``ansible`` or ``ansible-playbook``, from this interpreter's bin directory) on the lab."""
    env = {
        **os.environ,
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
    }
    return subprocess.run(
        [str(Path(sys.executable).with_name(args[0])), *args[1:], "-i", str(lab.inventory_path)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )


SshRunner = Callable[..., str]
AnsibleRunner = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def ssh() -> SshRunner:
    """``ssh(lab, host, command, check=True)``: run a command on a lab host as root, return its stdout."""
    return _ssh


@pytest.fixture
def ansible() -> AnsibleRunner:
    """``ansible(lab, tmp_path, "ansible-playbook", "play.yml", ...)``: run an Ansible CLI on the lab."""
    return _ansible


@pytest.fixture
def user(lab: Lab) -> str:
    """The lab's non-root user."""
    return USER
