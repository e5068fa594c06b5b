"""Hosts for the transport tests: the project's lab when it works here, else a throwaway sshd on 127.0.0.1.

The loopback sshd is a stand-in for a machine without root or without the lab, never a silent
substitute in CI: with ``MH_TEST_NO_SKIP=1`` (or ``MH_TRANSPORT_TARGET=lab``) a lab that cannot start
is an error of every transport test. ``MH_TRANSPORT_TARGET=loopback`` asks for the loopback sshd.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from labname import lab_name

LAB_USER = "mhtestuser"
LAB_USER_PASSWORD = "Mh-t3st-pw-41x"  # a throwaway account on a test sshd


@dataclass
class TargetHost:
    """One ssh-reachable test host: variables for root and for a non-root sudo user."""

    name: str
    root_vars: dict[str, Any]
    user_vars: dict[str, Any]
    user: str
    user_password: str


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_port(port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"sshd on 127.0.0.1:{port} did not start")


def _remove_user(name: str) -> None:
    """userdel, retried while the user's last sshd session process is still exiting."""
    deadline = time.monotonic() + 15
    while True:
        removed = subprocess.run(["userdel", "-r", name], check=False, capture_output=True, text=True)
        if removed.returncode in (0, 6, 12):  # 6: no such user; 12: home directory not removed entirely
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"userdel {name}: {removed.stderr.strip()}")
        time.sleep(0.2)


@contextlib.contextmanager
def loopback_sshd() -> Iterator[TargetHost]:
    """A private sshd on 127.0.0.1 (own key, port, config and PID file) plus a sudo user, all removed after."""
    if os.geteuid() != 0:
        pytest.skip("the loopback sshd needs root (a sudo user is created)")
    base = Path(tempfile.mkdtemp(prefix="mh-sshd-"))
    keys = base / "keys"
    keys.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(base / "host_key")], check=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(base / "id_ed25519")], check=True)
    pub = (base / "id_ed25519.pub").read_text()
    (keys / "root").write_text(pub)
    (keys / LAB_USER).write_text(pub)
    # sshd reads authorized_keys as the user logging in: mhtestuser must be able to reach it.
    for path in (base, keys, keys / "root", keys / LAB_USER):
        path.chmod(0o755 if path.is_dir() else 0o644)
    port = _free_port()
    config = base / "sshd_config"
    config.write_text(
        f"ListenAddress 127.0.0.1:{port}\nHostKey {base}/host_key\nPidFile {base}/sshd.pid\n"
        f"AuthorizedKeysFile {keys}/%u\nStrictModes no\nPermitRootLogin yes\nPasswordAuthentication yes\n"
        "KbdInteractiveAuthentication no\nUsePAM yes\nUseDNS no\nMaxStartups 50\nMaxSessions 50\n"
        "Subsystem sftp internal-sftp\n"
    )
    os.makedirs("/run/sshd", exist_ok=True)
    created_user = False
    sudoers = Path(f"/etc/sudoers.d/{LAB_USER}")
    pid: int | None = None
    try:
        if subprocess.run(["id", LAB_USER], capture_output=True, check=False).returncode != 0:
            subprocess.run(["useradd", "-m", "-s", "/bin/sh", LAB_USER], check=True)
            created_user = True
        subprocess.run(["chpasswd"], input=f"{LAB_USER}:{LAB_USER_PASSWORD}\n", text=True, check=True)
        sudoers.write_text(f"{LAB_USER} ALL=(ALL:ALL) ALL\n")
        sudoers.chmod(0o440)
        subprocess.run(["/usr/sbin/sshd", "-f", str(config), "-E", str(base / "sshd.log")], check=True)
        _wait_port(port, time.monotonic() + 10)
        pid = int((base / "sshd.pid").read_text())
        common = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
        root_vars = {
            "ansible_host": "127.0.0.1",
            "ansible_port": port,
            "ansible_user": "root",
            "ansible_ssh_private_key_file": str(base / "id_ed25519"),
            "ansible_ssh_common_args": common,
            "ansible_host_key_checking": False,
            "ansible_python_interpreter": "/usr/bin/python3",
        }
        user_vars = {**root_vars, "ansible_user": LAB_USER, "ansible_become_password": LAB_USER_PASSWORD}
        yield TargetHost("loopback", root_vars, user_vars, LAB_USER, LAB_USER_PASSWORD)
    finally:
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        sudoers.unlink(missing_ok=True)
        if created_user:
            _remove_user(LAB_USER)
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def lab_host() -> Iterator[TargetHost]:
    """One host of the project's lab, if ``pytest_mh_ansible.lab`` is there and works here."""
    from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec, LabUserSpec

    spec = LabSpec(
        name=lab_name("mhtransport"), hosts=(LabHostSpec("h1", roles=("client",)),), user=LabUserSpec(name=LAB_USER)
    )
    with Lab(spec) as lab:
        data = yaml.safe_load(Path(lab.inventory_path).read_text())
        host_vars, group_vars = _find_host(data, "h1")
        root_vars = {**group_vars, **host_vars}
        user = str(root_vars.pop("mh_lab_user"))
        password = str(root_vars.pop("mh_lab_user_password"))
        # Only root's key is authorized in lab hosts: the user logs in with its password.
        user_vars = {
            **root_vars,
            "ansible_user": user,
            "ansible_password": password,
            "ansible_become_password": password,
        }
        yield TargetHost("h1", root_vars, user_vars, user, password)


def _find_host(data: dict[str, Any], name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The host's own vars and the vars of its groups (outermost first), from a YAML inventory."""

    def walk(groups: dict[str, Any], inherited: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
        for entry in groups.values():
            group = entry or {}
            merged = {**inherited, **(group.get("vars") or {})}
            hosts = group.get("hosts") or {}
            if hosts.get(name):
                return dict(hosts[name]), merged
            found = walk(group.get("children") or {}, merged)
            if found is not None:
                return found
        return None

    found = walk(data, {})
    if found is None:
        raise LookupError(f"host {name!r} not in the lab inventory")
    return found


@pytest.fixture(scope="session")
def target() -> Iterator[TargetHost]:
    """A host reachable over ssh: a lab host when the lab works (root), else a loopback sshd (see above)."""
    with contextlib.ExitStack() as stack:
        yield choose_target(stack)


def choose_target(stack: contextlib.ExitStack) -> TargetHost:
    """The lab's host, entered on ``stack``; the loopback sshd only where the lab may be missing.

    :raises pytest.fail.Exception: The lab could not start and ``MH_TEST_NO_SKIP=1`` or
        ``MH_TRANSPORT_TARGET=lab`` is set: the tests would run against another sshd than they claim.
    """
    wanted = os.environ.get("MH_TRANSPORT_TARGET", "auto")
    if os.geteuid() == 0 and wanted in ("auto", "lab"):
        try:
            return stack.enter_context(lab_host())
        except Exception as err:
            if wanted == "lab" or os.environ.get("MH_TEST_NO_SKIP") == "1":
                why = "MH_TRANSPORT_TARGET=lab" if wanted == "lab" else "MH_TEST_NO_SKIP=1"
                pytest.fail(
                    f"the transport tests' lab host could not start ({why}: no loopback sshd instead): {err!r}",
                    pytrace=False,
                )
            print(f"lab unavailable, using a loopback sshd: {err!r}")
    return stack.enter_context(loopback_sshd())


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on."""
    return _free_port()
