"""Lab hosts are separate machines: own files, names, users, ssh access, and process table."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from pytest_mh_ansible.lab import Lab

Ssh = Callable[..., str]
Ansible = Callable[..., "subprocess.CompletedProcess[str]"]


pytestmark = pytest.mark.integration


def test_hosts__are_running_with_their_recorded_addresses(lab: Lab, ssh: Ssh) -> None:
    hosts = {h.name: h for h in lab.status()}
    assert set(hosts) == {"client1", "server1", "server2"}
    assert all(h.running and h.pid for h in hosts.values())
    assert hosts["server2"].init == "systemd"
    assert hosts["client1"].init == "sysv"
    for name, host in hosts.items():
        assert ssh(lab, name, "hostname").strip() == name
        assert host.address in ssh(lab, name, "ip -4 -o addr show dev eth0")


def test_files__written_in_one_host_are_invisible_elsewhere(lab: Lab, ssh: Ssh) -> None:
    ssh(lab, "client1", "echo from-client1 > /etc/mh-marker && echo x > /root/mh-marker && echo y > /home/mh-marker")
    for other in ("server1", "server2"):
        out = ssh(lab, other, "ls /etc/mh-marker /root/mh-marker /home/mh-marker 2>&1; true")
        assert out.count("No such file") == 3, out
    for path in ("/etc/mh-marker", "/root/mh-marker", "/home/mh-marker"):
        assert not Path(path).exists()
    assert (lab.host_dir("client1") / "upper/etc/mh-marker").read_text() == "from-client1\n"


def test_root_and_home__start_empty_and_lab_files_are_hidden(lab: Lab, ssh: Ssh, user: str) -> None:
    root_files = ssh(lab, "server1", "ls -A /root").split()
    assert ".ssh" in root_files
    assert ".bashrc" not in root_files  # the machine's root dotfiles stay out
    assert ssh(lab, "server1", "ls -A /home").split() == [user]
    assert ssh(lab, "server1", f"ls -A {lab.directory} 2>/dev/null; true").strip() == ""
    assert "id_ed25519" not in ssh(lab, "server1", f"ls -A {lab.key_path.parent} 2>&1; true")


def test_process_table__is_private_and_pid1_is_lab_init(lab: Lab, ssh: Ssh) -> None:
    assert ssh(lab, "client1", "cat /proc/1/comm").strip() == "lab-init"
    assert ssh(lab, "server2", "cat /proc/1/comm").strip() == "systemd"
    ps = ssh(lab, "client1", "ps -eo comm=").split()
    assert "lab-init" in ps
    assert "systemd" not in ps


def test_names__resolve_between_hosts(lab: Lab, ssh: Ssh) -> None:
    addresses = {h.name: h.address for h in lab.status()}
    for peer, address in addresses.items():
        assert ssh(lab, "client1", f"getent hosts {peer}").split() == [address, peer]
    # a host reaches a peer's sshd by name
    assert ssh(lab, "server1", "python3 -c \"import socket; socket.create_connection(('server2', 22), 2)\"") == ""


def test_ssh__by_key_through_ssh_config_and_inventory_files(lab: Lab) -> None:
    inventory = yaml.safe_load(lab.inventory_path.read_text())
    hosts = inventory["all"]["hosts"]
    assert inventory["all"]["vars"]["mh_lab"] == lab.spec.name
    assert set(inventory["all"]["children"][lab.names.group]["hosts"]) == {"client1", "server1", "server2"}
    assert set(inventory["all"]["children"]["server"]["hosts"]) == {"server1", "server2"}
    assert set(inventory["all"]["children"]["web"]["hosts"]) == {"server1"}
    assert hosts["server1"]["mh_domain"] == "app"
    assert hosts["client1"]["ansible_user"] == "root"
    assert "StrictHostKeyChecking=yes" in hosts["client1"]["ansible_ssh_common_args"]
    # Each user of the inventory keeps its own ssh masters: no shared ControlPath, no directory for one.
    assert "ControlPath" not in hosts["client1"]["ansible_ssh_common_args"]
    assert not (lab.directory / "cp").exists()
    known = lab.known_hosts_path.read_text()
    for name, entry in hosts.items():
        assert f"{name},{entry['ansible_host']} ssh-ed25519 " in known
    assert os.stat(lab.key_path).st_mode & 0o077 == 0
    # Straight by address, with the inventory's own arguments.
    entry = hosts["server1"]
    argv = ["ssh", "-i", entry["ansible_ssh_private_key_file"], *entry["ansible_ssh_common_args"].split()]
    out = subprocess.run(
        [*argv, f"root@{entry['ansible_host']}", "hostname"], check=False, capture_output=True, text=True
    )
    assert out.stdout.strip() == "server1", out.stderr


def _sshpass(address: str, user: str, password: str, command: str, lab: Lab) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sshpass", "-e", "ssh", "-o", "PubkeyAuthentication=no", "-o", f"UserKnownHostsFile={lab.known_hosts_path}",
         "-o", "StrictHostKeyChecking=yes", f"{user}@{address}", command],
        check=False, capture_output=True, text=True, env={**os.environ, "SSHPASS": password}, timeout=60,
    )  # fmt: skip


def test_ssh__by_password_for_user_and_root(lab: Lab, user: str) -> None:
    hosts = yaml.safe_load(lab.inventory_path.read_text())["all"]["hosts"]
    entry = hosts["client1"]
    assert entry["mh_lab_user"] == user
    out = _sshpass(entry["ansible_host"], user, entry["mh_lab_user_password"], "id -un", lab)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == user, out.stderr
    wrong = _sshpass(entry["ansible_host"], user, "wrong-password", "true", lab)
    assert wrong.returncode == 5  # sshpass: wrong password
    out = _sshpass(entry["ansible_host"], "root", entry["ansible_password"], "id -un", lab)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "root", out.stderr
    passwords = yaml.safe_load(lab.passwords_path.read_text())
    assert passwords == {"root": entry["ansible_password"], user: entry["mh_lab_user_password"]}
    assert os.stat(lab.passwords_path).st_mode & 0o077 == 0


def test_sudo__user_becomes_root_with_its_password(lab: Lab, user: str) -> None:
    entry = yaml.safe_load(lab.inventory_path.read_text())["all"]["hosts"]["server1"]
    password = entry["mh_lab_user_password"]
    out = _sshpass(entry["ansible_host"], user, password, f"echo {password} | sudo -S -p '' id -u", lab)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0", out.stderr
    denied = _sshpass(entry["ansible_host"], user, password, "sudo -n id -u", lab)
    assert denied.returncode != 0  # a password is required
