#!/usr/bin/python
"""Ansible module: put paths back exactly as a snapshot from mh_ansible.rollback.snapshot recorded them."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: restore
short_description: Restore paths exactly as a snapshot recorded them
version_added: 0.1.0
description:
  - Puts every path of a snapshot taken by M(mh_ansible.rollback.snapshot) back as recorded.
  - Paths that did not exist at snapshot time are removed (directories recursively, symlinks without following them).
  - Inside directories, entries created since the snapshot are removed, deleted ones are recreated and changed
    ones restored; a path whose type changed (a file replaced by a directory, or the reverse) is replaced.
  - File contents are compared by sha256 and replaced atomically through a temporary file in the same directory.
  - Mode (including setuid, setgid and sticky bits), owner, group and symlink targets are restored.
    Directories get their mode last, so read-only directories can still be refilled.
  - Entries matching the snapshot's exclude patterns are neither compared nor touched.
  - Sockets cannot be recreated; a deleted socket is reported as a warning.
author:
  - pytest-mh-ansible developers
options:
  name:
    description: Name of the snapshot to restore.
    type: str
    required: true
  backup_dir:
    description: Directory holding the snapshots.
    type: path
    default: /var/lib/mh-ansible/snapshots
  paths:
    description:
      - Restore only these of the snapshot's paths (as given to M(mh_ansible.rollback.snapshot)).
      - When set, the snapshot is kept whatever O(remove) says, so that the other paths can still be restored.
    type: list
    elements: path
  remove:
    description: Delete the snapshot after a successful restore of all its paths. Never done in check mode.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    details: Reports what would change, changes nothing and keeps the snapshot.
  diff_mode:
    support: full
    details: One entry per changed path; content diffs for small text files, summary lines otherwise.
seealso:
  - module: mh_ansible.rollback.snapshot
"""

EXAMPLES = r"""
- name: Undo everything a test did to the SSH configuration
  mh_ansible.rollback.restore:
    name: before-test-sshd

- name: See what a test changed without undoing it
  mh_ansible.rollback.restore:
    name: before-test-sshd
  check_mode: true
  diff: true

- name: Restore one path now and keep the snapshot for the rest
  mh_ansible.rollback.restore:
    name: before-test-sshd
    paths:
      - /etc/ssh/sshd_config
"""

RETURN = r"""
restored:
  description: Each path that was (or in check mode would be) removed, created or updated, with what differed.
  returned: always
  type: list
  elements: dict
  sample:
    - {"path": "/etc/motd", "action": "updated", "changes": ["content changed", "mode 0600 -> 0644"]}
    - {"path": "/etc/new.conf", "action": "removed", "changes": ["file mode 0644 owner root:root size 3 -> absent"]}
    - {"path": "/etc/ssh/old.conf", "action": "created", "changes": ["absent -> file mode 0644 owner root:root size 9"]}
snapshot_removed:
  description: Whether the snapshot was deleted after the restore.
  returned: always
  type: bool
  sample: true
not_restored:
  description: What could not be put back exactly (also given as warnings); empty when everything was.
  returned: always
  type: list
  elements: str
  sample: ["/run/app.sock: cannot recreate the socket (File name too long), left absent"]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.mh_ansible.rollback.plugins.module_utils._fsstate import (
    apply_restore,
    describe,
    plan_restore,
    step_diff,
    summary,
)
from ansible_collections.mh_ansible.rollback.plugins.module_utils._snapshots import (
    DEFAULT_BACKUP_DIR,
    blob_path,
    check_name,
    delete_snapshot,
    read_manifest,
)

_DONE = {"remove": "removed", "create": "created", "update": "updated"}


def _report(step: dict) -> dict:
    if step["action"] == "remove":
        changes = ["{} -> absent".format(describe(step["current"]))]
    elif step["action"] == "create":
        changes = ["absent -> {}".format(describe(step["wanted"]))]
    else:
        changes = [summary([change]) for change in step["changes"]]
    return {"path": step["path"], "action": _DONE[step["action"]], "changes": changes}


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            backup_dir=dict(type="path", default=DEFAULT_BACKUP_DIR),
            paths=dict(type="list", elements="path"),
            remove=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    name = module.params["name"]
    backup_dir = os.path.normpath(module.params["backup_dir"])
    problem = check_name(name)
    if problem:
        module.fail_json(msg=problem)
    try:
        manifest = read_manifest(backup_dir, name)
    except (OSError, ValueError) as err:
        module.fail_json(msg=f"snapshot {name!r} in {backup_dir!r} cannot be read: {err}")
    if manifest is None:
        module.fail_json(msg=f"snapshot {name!r} not found in backup_dir {backup_dir!r}")

    roots = manifest["roots"]
    subset = module.params["paths"]
    if subset is not None:
        known = {root["path"]: root for root in roots}
        wanted = [os.path.normpath(path) for path in subset]
        unknown = [path for path in wanted if path not in known]
        if unknown:
            missing = ", ".join(repr(path) for path in unknown)
            present = ", ".join(repr(path) for path in sorted(known))
            module.fail_json(msg=f"snapshot {name!r} in {backup_dir!r} has no path {missing}; it has {present}")
        roots = [known[path] for path in wanted]

    def blob_for(sha256: str) -> str:
        return blob_path(backup_dir, name, sha256)

    restored = []
    diffs = []
    warnings = []
    try:
        for root in roots:
            steps = plan_restore(root["records"], root.get("exclude", ()), skip=[backup_dir])
            restored.extend(_report(step) for step in steps)
            if module._diff:
                diffs.extend(step_diff(step, blob_for) for step in steps)
            if not module.check_mode:
                warnings.extend(apply_restore(steps, blob_for))
    except OSError as err:
        module.fail_json(
            msg=f"restoring snapshot {name!r} from {backup_dir!r}: {err.filename}: {err.strerror or err}",
            restored=restored,
        )
    for warning in warnings:
        module.warn(warning)

    removed = False
    if module.params["remove"] and subset is None and not module.check_mode:
        delete_snapshot(backup_dir, name)
        removed = True
    result = dict(changed=bool(restored), restored=restored, snapshot_removed=removed, not_restored=warnings)
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
