"""Packages listed in the spec install inside one host, offline, from the lab's cache."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_mh_ansible.lab import Lab

Ssh = Callable[..., str]
Ansible = Callable[..., "subprocess.CompletedProcess[str]"]


pytestmark = pytest.mark.integration


def _installed_on_machine(package: str) -> bool:
    proc = subprocess.run(["dpkg", "-s", package], check=False, capture_output=True, text=True)
    return proc.returncode == 0 and "Status: install ok installed" in proc.stdout


def test_package__installs_offline_in_one_host_only(lab: Lab, ssh: Ssh) -> None:
    assert not _installed_on_machine("tree"), "pick a package the machine does not have"
    machine_flag = Path("/var/lib/man-db/auto-update").exists()
    ssh(lab, "client1", "DEBIAN_FRONTEND=noninteractive apt-get install -y tree")
    # man-db's trigger is off in the hosts (docs/lab.md): its flag file is hidden there, not on the machine
    assert ssh(lab, "client1", "test -e /var/lib/man-db/auto-update; echo rc=$?", check=False).strip() == "rc=1"
    assert Path("/var/lib/man-db/auto-update").exists() == machine_flag
    assert ssh(lab, "client1", "tree -L 1 /srv").startswith("/srv")
    # apt's binary cache is on in the hosts (docs/lab.md), whatever the machine's apt.conf.d says: an apt
    # call after the install brings it up to date in the host's own /var/cache/apt, and the next reads it
    assert ssh(lab, "client1", "apt-config dump Dir::Cache::pkgcache").strip() == 'Dir::Cache::pkgcache "pkgcache.bin";'
    stat = "apt-cache policy tree >/dev/null && stat -c '%i %.9Y %s' /var/cache/apt/pkgcache.bin"
    built = ssh(lab, "client1", stat)
    assert ssh(lab, "client1", stat) == built, "apt rebuilt its cache instead of reading it"
    assert ssh(lab, "server1", "command -v tree; echo rc=$?", check=False).strip() == "rc=1"
    assert not _installed_on_machine("tree")


def test_nginx__installs_with_ansible_apt_and_serves(lab: Lab, tmp_path: Path, ssh: Ssh, ansible: Ansible) -> None:
    proc = ansible(
        lab, tmp_path, "ansible", "server1", "-m", "ansible.builtin.apt", "-a", "name=nginx update_cache=false"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not _installed_on_machine("nginx")
    # as on an ordinary Debian host, installing the package started its service
    assert ssh(lab, "server1", "service nginx status >/dev/null; echo rc=$?").strip() == "rc=0"
    ssh(lab, "server1", "service nginx stop >/dev/null")
    assert ssh(lab, "server1", "service nginx status >/dev/null; echo rc=$?", check=False).strip() == "rc=3"
    ssh(lab, "server1", "service nginx start >/dev/null")
    fetch = "python3 -c \"import urllib.request as u; print(u.urlopen('http://server1/').status)\""
    for _ in range(50):
        out = ssh(lab, "client1", fetch + " 2>/dev/null; true").strip()
        if out:
            break
        time.sleep(0.1)
    assert out == "200"
