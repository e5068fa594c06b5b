#!/usr/bin/python
"""Ansible module: snapshot paths (content, type, mode, owner, symlink targets) into a backup area on the host."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: snapshot
short_description: Snapshot files, directories and symlinks so they can be restored exactly
version_added: 0.1.0
description:
  - Records each path in O(paths) - whether it exists, its type, mode (including setuid, setgid and
    sticky bits), numeric owner and group, the target of a symlink (never followed) and, for regular
    files, the content - into a snapshot under O(backup_dir).
  - Directories are recorded recursively, with their own mode and owner.
  - Fifos, sockets and device nodes are recorded with their kind but without content.
  - Paths that do not exist are recorded as absent, so that M(mh_ansible.rollback.restore) removes them.
  - Re-using a O(name) replaces the earlier snapshot of that name atomically.
  - Hard links are not preserved; each link is stored as an independent file.
author:
  - pytest-mh-ansible developers
options:
  paths:
    description: Absolute paths to record.
    type: list
    elements: path
    required: true
  name:
    description:
      - Snapshot identifier, used as a directory name below O(backup_dir).
      - Letters, digits and C(. _ @ + -); must not start with a dot or a dash.
    type: str
    required: true
  backup_dir:
    description: Directory holding the snapshots; created with mode C(0700) when missing.
    type: path
    default: /var/lib/mh-ansible/snapshots
  exclude:
    description:
      - Glob patterns of entries inside directories to leave out, with everything below them.
      - A pattern matches an entry's base name, its path relative to the given path, or its full path.
      - The same patterns are applied again by M(mh_ansible.rollback.restore), which leaves excluded entries alone.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    details: Walks the paths and reports what would be recorded, writes nothing.
  diff_mode:
    support: none
    details: A snapshot changes nothing on the paths themselves.
seealso:
  - module: mh_ansible.rollback.restore
  - module: mh_ansible.rollback.host_state
"""

EXAMPLES = r"""
- name: Snapshot the SSH configuration before a test changes it
  mh_ansible.rollback.snapshot:
    name: before-test-sshd
    paths:
      - /etc/ssh/sshd_config
      - /etc/ssh/sshd_config.d

- name: Snapshot a web root, leaving logs and caches out
  mh_ansible.rollback.snapshot:
    name: webroot
    paths:
      - /srv/www
    exclude:
      - "*.log"
      - cache
"""

RETURN = r"""
snapshot:
  description: Name of the snapshot written.
  returned: always
  type: str
  sample: before-test-sshd
snapshot_dir:
  description: Directory of the snapshot on the host.
  returned: always
  type: str
  sample: /var/lib/mh-ansible/snapshots/before-test-sshd
paths:
  description: Per given path, whether it existed, its type and how many entries were recorded.
  returned: always
  type: dict
  sample:
    /etc/ssh/sshd_config: {"exists": true, "type": "file", "entries": 1}
    /etc/ssh/sshd_config.d: {"exists": true, "type": "directory", "entries": 3}
bytes:
  description: Bytes of file content copied into the snapshot (identical contents are stored once); 0 in check mode.
  returned: always
  type: int
  sample: 3264
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.mh_ansible.rollback.plugins.module_utils._fsstate import ABSENT
from ansible_collections.mh_ansible.rollback.plugins.module_utils._snapshots import (
    DEFAULT_BACKUP_DIR,
    check_name,
    record_roots,
    snapshot_dir,
    take_snapshot,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            paths=dict(type="list", elements="path", required=True),
            name=dict(type="str", required=True),
            backup_dir=dict(type="path", default=DEFAULT_BACKUP_DIR),
            exclude=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    name = module.params["name"]
    backup_dir = os.path.normpath(module.params["backup_dir"])
    exclude = module.params["exclude"]
    problem = check_name(name)
    if problem:
        module.fail_json(msg=problem)
    paths = []
    for path in module.params["paths"]:
        if not os.path.isabs(path):
            module.fail_json(msg=f"path {path!r} is not absolute")
        paths.append(os.path.normpath(path))

    report = {}
    try:
        roots = record_roots(backup_dir, paths, exclude)
    except OSError as err:
        module.fail_json(msg=f"snapshot {name!r}: cannot read {err.filename!r}: {err.strerror}")
    for root in roots:
        records = root["records"]
        kind = records[0]["type"]
        entries = len(records) if kind != ABSENT else 0
        report[root["path"]] = {"exists": kind != ABSENT, "type": kind, "entries": entries}

    result = dict(changed=True, snapshot=name, snapshot_dir=snapshot_dir(backup_dir, name), paths=report, bytes=0)
    if module.check_mode:
        module.exit_json(**result)
    try:
        copied = take_snapshot(backup_dir, name, roots)
    except OSError as err:
        module.fail_json(
            msg=f"snapshot {name!r} in {backup_dir!r}: {err.filename or backup_dir}: {err.strerror or err}"
        )
    result["bytes"] = copied
    module.exit_json(**result)


if __name__ == "__main__":
    main()
