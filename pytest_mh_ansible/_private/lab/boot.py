"""Booting hosts: each host's overlay layer prepared, its PID 1 launched in fresh namespaces, its sshd awaited."""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Final

from pytest_mh_ansible._private.lab.hostfs import HostLayer, etc_hosts, sshd_config
from pytest_mh_ansible._private.lab.inventory import write_private
from pytest_mh_ansible._private.lab.process import launch, wait_for_child, wait_for_port
from pytest_mh_ansible._private.lab.spec import LabUserSpec
from pytest_mh_ansible._private.lab.state import HostState
from pytest_mh_ansible._private.lab.system import run
from pytest_mh_ansible.errors import LabError

__all__ = ["BOOT_TIMEOUT", "host_keys", "launch_host", "prepare_layers", "wait_ready"]

# systemd boots a whole userspace (journald, dbus, logind) before ssh; lab-init starts ssh at once.
BOOT_TIMEOUT: Final = {"sysv": 15.0, "systemd": 60.0}


def host_keys(hosts: Sequence[HostState], host_dir: Mapping[str, Path]) -> dict[str, str]:
    """Create (once) each host's ed25519 host key in its directory; returns ``name -> "ssh-ed25519 AAAA..."``."""
    keys = {}
    for host in hosts:
        key = host_dir[host.name] / "ssh_host_ed25519_key"
        if not key.exists():
            key.parent.mkdir(parents=True, exist_ok=True)
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"root@{host.name}", "-f", str(key)],
                what=f"host {host.name!r}: creating its host key")  # fmt: skip
        keys[host.name] = " ".join(Path(f"{key}.pub").read_text().split()[:2])
    return keys


def _key_names(host: HostState) -> str:
    """The names a host's key is pinned by in known_hosts: short name, fully qualified name, address."""
    names = [host.name, *([host.fqdn] if host.fqdn and host.fqdn != host.name else []), host.address]
    return ",".join(names)


def prepare_layers(
    hosts: Sequence[HostState],
    host_dir: Mapping[str, Path],
    *,
    keys: Mapping[str, str],
    authorized_keys: str,
    hidden: Sequence[str],
    passwords: Mapping[str, str],
    user: LabUserSpec | None,
    root_password: bool,
    debs: Sequence[Path],
) -> None:
    """Write every host's upper layer and its ``init.json`` (what lab-init does inside the host)."""
    hosts_file = etc_hosts({h.name: h.address for h in hosts}, {h.name: h.fqdn for h in hosts if h.fqdn})
    known_hosts = "".join(f"{_key_names(h)} {keys[h.name]}\n" for h in hosts)
    chpasswd = "".join(f"{name}:{password}\n" for name, password in passwords.items())
    for host in hosts:
        hdir = host_dir[host.name]
        for sub in ("upper", "work", "root"):
            (hdir / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(hdir / "upper", 0o755)
        key = hdir / "ssh_host_ed25519_key"
        layer = HostLayer(hdir / "upper")
        layer.setup_base(hostname=host.fqdn or host.name, etc_hosts=hosts_file, hidden=hidden)
        # Each host is its own machine for journald, dbus and Ansible's facts.
        layer.write("/etc/machine-id", secrets.token_hex(16) + "\n", 0o444)
        layer.setup_ssh(
            sshd_config=sshd_config(root_password=root_password),
            host_key=key.read_bytes(),
            host_key_pub=Path(f"{key}.pub").read_text(),
            authorized_keys=authorized_keys,
        )
        layer.write("/etc/ssh/ssh_known_hosts", known_hosts)  # hosts ssh to each other with pinned keys
        if host.init == "systemd":
            layer.setup_systemd()
        if debs:
            layer.link_files("/var/cache/apt/archives", debs)
        config = {
            "hostname": host.fqdn or host.name,
            "root": str(hdir / "root"),
            "upper": str(hdir / "upper"),
            "work": str(hdir / "work"),
            "init": host.init,
            "chpasswd": chpasswd,
            "user": None if user is None else {"name": user.name, "sudo": user.sudo, "nopasswd": user.nopasswd},
        }
        write_private(hdir / "init.json", json.dumps(config))


def launch_host(host: HostState, host_dir: Path, init_script: Path) -> HostState:
    """Start the host's PID 1 (lab-init) in its netns and in new mount, UTS, IPC and PID namespaces.

    ``unshare --kill-child`` ties the host to the launcher: killing either kills the whole PID namespace,
    and the mount namespace with its overlay and tmpfs mounts goes with it. Nothing is mounted on the machine.
    """
    argv = ["/usr/bin/nsenter", f"--net=/run/netns/{host.netns}", "unshare", "--mount", "--uts", "--ipc",
            "--pid", "--fork", "--kill-child", "--propagation", "private"]  # fmt: skip
    if host.cgroup:
        # The launcher joins the host's cgroup first, then unshares: the new cgroup namespace is rooted there.
        argv = ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', host.cgroup, *argv, "--cgroup"]
    argv += [str(init_script), str(host_dir / "init.json")]
    launcher = launch(argv, host_dir / "console.log")
    pid1 = wait_for_child(launcher, timeout=5.0)
    return replace(host, launcher=launcher, pid1=pid1)


def wait_ready(lab: str, hosts: Sequence[HostState], host_dir: Mapping[str, Path]) -> None:
    """Wait until every host's sshd accepts TCP connections; the hosts boot in parallel meanwhile.

    :raises LabError: A host's PID 1 died or its sshd did not accept in time; the message has its console log.
    """
    start = time.monotonic()
    for host in hosts:
        assert host.pid1 is not None
        deadline = start + BOOT_TIMEOUT[host.init]
        if wait_for_port(host.address, 22, deadline, host.pid1):
            continue
        log = host_dir[host.name] / "console.log"
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no console log)"
        if host.pid1.alive:
            why = f"its sshd did not accept connections within {BOOT_TIMEOUT[host.init]:g} s"
        else:
            why = "its PID 1 exited"
        raise LabError(f"lab {lab!r}: host {host.name!r} ({host.address}) did not come up: {why}. {log}:\n{tail}")
