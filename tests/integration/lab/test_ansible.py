"""Ansible drives lab hosts like ordinary machines: sysv services, systemd units, become."""

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

SYSV_SCRIPT = """#!/bin/sh
### BEGIN INIT INFO
# Provides:          labsysv
# Required-Start:    $remote_fs
# Required-Stop:     $remote_fs
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: test web server of the lab
### END INIT INFO
PIDFILE=/run/labsysv.pid
case "$1" in
  start)
    mkdir -p /srv/labsysv && echo "hello from $(hostname)" > /srv/labsysv/index.html
    start-stop-daemon --start --quiet --background --make-pidfile --pidfile $PIDFILE \\
      --exec /usr/bin/python3 -- -m http.server 8081 --directory /srv/labsysv ;;
  stop) start-stop-daemon --stop --quiet --oknodo --remove-pidfile --pidfile $PIDFILE ;;
  restart) $0 stop; $0 start ;;
  status) start-stop-daemon --status --pidfile $PIDFILE; rc=$?; [ $rc -eq 1 ] && rc=3; exit $rc ;;
  *) echo "usage: $0 start|stop|restart|status"; exit 2 ;;
esac
"""

SYSV_PLAYBOOK = """
- name: Run a sysv service on the servers
  hosts: web
  gather_facts: true
  tasks:
    - name: Record the service manager
      ansible.builtin.debug:
        msg: "service_mgr={{ ansible_facts.service_mgr }}"
    - name: Install the init script
      ansible.builtin.copy:
        src: labsysv
        dest: /etc/init.d/labsysv
        mode: "0755"
    - name: Start the service
      ansible.builtin.service:
        name: labsysv
        state: started
        enabled: true
"""

STOP_PLAYBOOK = """
- name: Stop the sysv service
  hosts: web
  gather_facts: false
  tasks:
    - name: Stop it
      ansible.builtin.service:
        name: labsysv
        state: stopped
"""

UNIT = """[Unit]
Description=lab test unit
[Service]
ExecStart=/usr/bin/python3 -m http.server 8082
"""

SYSTEMD_PLAYBOOK = """
- name: Drive a systemd unit
  hosts: server2
  gather_facts: false
  tasks:
    - name: Install the unit
      ansible.builtin.copy:
        src: labunit.service
        dest: /etc/systemd/system/labunit.service
        mode: "0644"
    - name: Start it
      ansible.builtin.systemd:
        name: labunit
        state: "{{ unit_state }}"
        daemon_reload: true
"""


def _play(ansible: Ansible, lab: Lab, tmp_path: Path, text: str, *extra: str) -> str:
    (tmp_path / "play.yml").write_text(text)
    proc = ansible(lab, tmp_path, "ansible-playbook", "play.yml", *extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_sysv_service__started_idempotently_and_stopped_by_ansible(
    lab: Lab, tmp_path: Path, ssh: Ssh, ansible: Ansible
) -> None:
    (tmp_path / "labsysv").write_text(SYSV_SCRIPT)
    first = _play(ansible, lab, tmp_path, SYSV_PLAYBOOK)
    assert "service_mgr=lab-init" in first
    assert "changed=2" in first  # copy + start
    again = _play(ansible, lab, tmp_path, SYSV_PLAYBOOK)
    assert "changed=0" in again
    assert ssh(lab, "server1", "service labsysv status; echo rc=$?").strip().endswith("rc=0")
    assert ssh(lab, "server1", "ls /etc/rc2.d/ | grep labsysv").strip() == "S01labsysv"
    fetch = "python3 -c \"import urllib.request as u; print(u.urlopen('http://server1:8081/').read().decode())\""
    for _ in range(50):
        out = ssh(lab, "client1", fetch + " 2>/dev/null; true")
        if out:
            break
        time.sleep(0.1)
    assert out.strip() == "hello from server1"
    stopped = _play(ansible, lab, tmp_path, STOP_PLAYBOOK)
    assert "changed=1" in stopped
    assert "changed=0" in _play(ansible, lab, tmp_path, STOP_PLAYBOOK)
    assert ssh(lab, "server1", "service labsysv status; echo rc=$?", check=False).strip().endswith("rc=3")
    # the script was only ever installed on server1
    assert ssh(lab, "client1", "test -e /etc/init.d/labsysv; echo $?").strip() == "1"


def _wait_system_running(ssh: Ssh, lab: Lab, host: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while True:
        state = ssh(lab, host, "systemctl is-system-running", check=False).strip()
        if state in ("running", "degraded") or time.monotonic() > deadline:
            return state
        time.sleep(0.2)


def test_systemd_host__boots_and_ansible_drives_a_unit(lab: Lab, tmp_path: Path, ssh: Ssh, ansible: Ansible) -> None:
    assert _wait_system_running(ssh, lab, "server2") in ("running", "degraded")
    running = ssh(lab, "server2", "systemctl list-units --type=service --state=running --no-legend --plain")
    assert "ssh.service" in running
    assert "postgresql" not in running
    assert "cron" not in running  # the machine's enabled units stay off
    (tmp_path / "labunit.service").write_text(UNIT)
    out = _play(ansible, lab, tmp_path, SYSTEMD_PLAYBOOK, "-e", "unit_state=started")
    assert "changed=2" in out
    assert ssh(lab, "server2", "systemctl is-active labunit").strip() == "active"
    assert "changed=0" in _play(ansible, lab, tmp_path, SYSTEMD_PLAYBOOK, "-e", "unit_state=started")
    assert "changed=1" in _play(ansible, lab, tmp_path, SYSTEMD_PLAYBOOK, "-e", "unit_state=stopped")
    assert ssh(lab, "server2", "systemctl is-active labunit", check=False).strip() == "inactive"
    facts = ansible(
        lab, tmp_path, "ansible", "server2", "-m", "ansible.builtin.setup", "-a", "filter=ansible_service_mgr"
    )
    assert '"ansible_service_mgr": "systemd"' in facts.stdout, facts.stdout + facts.stderr


def test_become__user_connects_by_password_and_becomes_root(
    lab: Lab, tmp_path: Path, ansible: Ansible, user: str
) -> None:
    proc = ansible(
        lab, tmp_path, "ansible", "client1", "-m", "ansible.builtin.command", "-a", "id -u", "--become",
        "-e", f"ansible_user={user}", "-e", "ansible_password={{ mh_lab_user_password }}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "0"
