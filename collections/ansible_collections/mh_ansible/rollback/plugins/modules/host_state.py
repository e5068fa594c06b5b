#!/usr/bin/python
"""Ansible module: a read-only fingerprint of a host (paths, users, packages, services) for drift checks."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_state
short_description: Fingerprint a host's files, users, packages and services to detect drift
version_added: 0.1.0
description:
  - Collects a JSON fingerprint of the host without changing anything; two fingerprints taken before
    and after a test compare equal when the test left nothing behind.
  - Paths are recorded like M(mh_ansible.rollback.snapshot) records them (type, mode, owner, symlink
    target, content hash), directories recursively.
  - Users and groups are read from C(/etc/passwd) and C(/etc/group).
  - Packages come from C(dpkg-query) on Debian-like hosts or C(rpm -qa) on RPM hosts; elsewhere the
    result is empty and a warning is issued.
  - Services come from C(systemctl) when systemd is running; otherwise each executable
    C(/etc/init.d) script is asked for its C(status) (in parallel, each limited to 5 seconds) and
    counts as enabled when an C(S??name) link exists in C(/etc/rc2.d).
author:
  - pytest-mh-ansible developers
options:
  paths:
    description: Absolute paths to fingerprint; directories are walked recursively without following symlinks.
    type: list
    elements: path
    default: []
  exclude:
    description: Glob patterns of entries inside directories to leave out (base name, relative or full path).
    type: list
    elements: str
    default: []
  users:
    description: Include users and groups.
    type: bool
    default: true
  packages:
    description: Include installed packages.
    type: bool
    default: true
  services:
    description: Include services.
    type: bool
    default: true
  unit_files:
    description:
      - The RV(unit_files) of an earlier call on this host. When the unit directories have the same
        signature as then, their states are taken from it instead of C(systemctl list-unit-files),
        which reads every unit file (about a second on a small host).
      - Only used with systemd and O(services=true).
    type: dict
  hash:
    description:
      - Record the sha256 of file contents.
      - When false, files are recorded by size and modification time only, which is faster but
        misses changes that keep both.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    details: The module never changes anything.
  diff_mode:
    support: none
seealso:
  - module: mh_ansible.rollback.snapshot
"""

EXAMPLES = r"""
- name: Fingerprint /etc and the users before a test
  mh_ansible.rollback.host_state:
    paths:
      - /etc
    exclude:
      - ld.so.cache
    packages: false
    services: false
  register: before

- name: Fingerprint everything after the test
  mh_ansible.rollback.host_state:
    paths:
      - /etc
    exclude:
      - ld.so.cache
    packages: false
    services: false
  register: after

- name: Fail on drift
  ansible.builtin.assert:
    that:
      - before.state == after.state
"""

RETURN = r"""
state:
  description: The fingerprint. Sections that were not asked for are empty.
  returned: always
  type: dict
  contains:
    paths:
      description:
        - Path to C({type, mode, uid, gid}) plus C(sha256) and C(size) (files, or C(size) and C(mtime)
          in nanoseconds when O(hash=false)), C(target) (symlinks) or C(kind) (fifos, sockets, devices).
        - Missing paths have type C(absent). C(mode) is an octal string.
      type: dict
      sample: {"/etc/hostname": {"type": "file", "mode": "0644", "uid": 0, "gid": 0, "size": 7, "sha256": "..."}}
    users:
      description: User name to C({uid, gid, home, shell}).
      type: dict
      sample: {"root": {"uid": 0, "gid": 0, "home": "/root", "shell": "/bin/bash"}}
    groups:
      description: Group name to C({gid, members}).
      type: dict
      sample: {"sudo": {"gid": 27, "members": ["alice"]}}
    packages:
      description: Package name to version; packages not fully installed have their dpkg status appended.
      type: dict
      sample: {"openssh-server": "1:9.2p1-2+deb12u3"}
    services:
      description:
        - Service to C({active, sub, enabled}). With systemd these are systemctl's words; with SysV init
          C(active) is C(active), C(inactive) or C(unknown) (status timed out), C(sub) is C(running),
          C(dead) or C(timeout), and C(enabled) is C(enabled) or C(disabled).
      type: dict
      sample: {"ssh.service": {"active": "active", "sub": "running", "enabled": "enabled"}}
unit_files:
  description:
    - The state of each systemd unit file (C(systemctl list-unit-files)) and a signature of the unit
      directories they were read from, to give back as O(unit_files) in the next call on this host.
    - Absent without systemd, with O(services=false), or when a unit directory changed in the last two
      seconds (its state could still change within the same timestamp).
  returned: sometimes
  type: dict
  sample: {"signature": "9f86d0...", "enabled": {"ssh.service": "enabled"}}
unit_files_reused:
  description: Whether the unit-file states came from O(unit_files) (no unit directory had changed).
  returned: when RV(unit_files) is
  type: bool
service_manager:
  description: Where services were read from.
  returned: always
  type: str
  choices: [systemd, sysv, none]
  sample: systemd
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.mh_ansible.rollback.plugins.module_utils._fsstate import walk
from ansible_collections.mh_ansible.rollback.plugins.module_utils._hoststate import (
    read_groups,
    read_packages,
    read_systemd_services,
    read_sysv_services,
    read_users,
    systemd_running,
)


def _path_state(rec: dict) -> dict:
    entry = {key: value for key, value in rec.items() if key not in ("path", "rdev")}
    if "mode" in entry:
        entry["mode"] = "{:04o}".format(entry["mode"])
    return entry


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            paths=dict(type="list", elements="path", default=[]),
            exclude=dict(type="list", elements="str", default=[]),
            users=dict(type="bool", default=True),
            packages=dict(type="bool", default=True),
            services=dict(type="bool", default=True),
            unit_files=dict(type="dict"),
            hash=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    state = {"paths": {}, "users": {}, "groups": {}, "packages": {}, "services": {}}

    def run(argv: list) -> tuple:
        return module.run_command(argv, environ_update={"LC_ALL": "C"})

    for path in params["paths"]:
        if not os.path.isabs(path):
            module.fail_json(msg=f"path {path!r} is not absolute")
        try:
            for rec in walk(os.path.normpath(path), params["exclude"], hash_content=params["hash"]):
                state["paths"][rec["path"]] = _path_state(rec)
        except OSError as err:
            module.fail_json(msg=f"host_state: cannot read {err.filename!r}: {err.strerror}")

    if params["users"]:
        try:
            state["users"] = read_users()
            state["groups"] = read_groups()
        except OSError as err:
            module.fail_json(msg=f"host_state: cannot read {err.filename!r}: {err.strerror}")

    if params["packages"]:
        state["packages"], warning = read_packages(run, module.get_bin_path)
        if warning:
            module.warn(warning)

    manager = "none"
    unit_files = None
    if params["services"]:
        if systemd_running() and module.get_bin_path("systemctl"):
            manager = "systemd"
            state["services"], warning, unit_files = read_systemd_services(run, params["unit_files"])
            if warning:
                module.warn(warning)
        elif os.path.isdir("/etc/init.d"):
            manager = "sysv"
            state["services"] = read_sysv_services(service=module.get_bin_path("service"))
        else:
            module.warn("no systemd and no /etc/init.d; services are not fingerprinted")

    extra = {}
    if unit_files is not None:
        known = params["unit_files"] or {}
        extra = {"unit_files": unit_files, "unit_files_reused": known.get("signature") == unit_files["signature"]}
    module.exit_json(changed=False, state=state, service_manager=manager, **extra)


if __name__ == "__main__":
    main()
