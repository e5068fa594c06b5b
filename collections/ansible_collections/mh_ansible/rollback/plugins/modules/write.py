#!/usr/bin/python
"""Ansible module: write a file's content given inline, snapshotting the file first for the rollback journal."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: write
short_description: Write a file from inline content, taking a restorable snapshot of it in the same call
version_added: 0.1.0
description:
  - Writes O(content) to O(dest) (created or replaced atomically) and sets the file attributes given
    (O(mode), O(owner), O(group)...), like M(ansible.builtin.copy) with C(content=), but as one module call
    on the host - no C(stat) module, no temporary file transferred from the controller, no remote temp dir.
  - With O(snapshot), records O(dest) into the snapshot O(snapshot) under O(backup_dir) first, exactly as
    M(mh_ansible.rollback.snapshot) would, so that M(mh_ansible.rollback.restore) puts it back. The
    snapshot is kept only when the file changed; otherwise it is removed and RV(snapshot) is null.
  - A symlink at O(dest) is compared through (its target's content) and, when the content differs,
    replaced by a file, as M(ansible.builtin.copy) does with C(follow=false).
  - The parent directory must exist.
author:
  - pytest-mh-ansible developers
options:
  dest:
    description: Absolute path of the file to write.
    type: path
    required: true
  content:
    description: The file's whole new content (text, written as UTF-8).
    type: str
    required: true
  snapshot:
    description:
      - Name of a snapshot of O(dest) to take before changing it (letters, digits and C(. _ @ + -)).
      - Omit to take none.
    type: str
  backup_dir:
    description: Directory holding the snapshots; created with mode C(0700) when missing.
    type: path
    default: /var/lib/mh-ansible/snapshots
extends_documentation_fragment:
  - ansible.builtin.files
attributes:
  check_mode:
    support: full
    details: Reports whether the content or the attributes would change, writes nothing and takes no snapshot.
  diff_mode:
    support: full
    details: The content before and after, and the attributes that change.
seealso:
  - module: ansible.builtin.copy
  - module: mh_ansible.rollback.snapshot
  - module: mh_ansible.rollback.restore
"""

EXAMPLES = r"""
- name: Write the application's configuration, restorable from the snapshot 'before-app-conf'
  mh_ansible.rollback.write:
    dest: /etc/app.conf
    content: |
      [main]
      port = 8080
    mode: "0640"
    snapshot: before-app-conf
"""

RETURN = r"""
dest:
  description: The file written.
  returned: always
  type: str
  sample: /etc/app.conf
checksum:
  description: SHA1 of the content written.
  returned: always
  type: str
  sample: 6e642bb8dd5c2e027bf21dd923337cbb4214f827
snapshot:
  description: Name of the snapshot taken and kept (the file changed), else null.
  returned: always
  type: str
  sample: before-app-conf
"""

import hashlib
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.mh_ansible.rollback.plugins.module_utils._fsstate import DIFF_MAX_BYTES
from ansible_collections.mh_ansible.rollback.plugins.module_utils._snapshots import (
    DEFAULT_BACKUP_DIR,
    check_name,
    delete_snapshot,
    record_roots,
    snapshot_dir,
    take_snapshot,
)


def _current(dest: str) -> bytes | None:
    """The bytes at ``dest`` (through a symlink), or None when there is no regular file there."""
    try:
        with open(dest, "rb") as handle:
            return handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _text(data: bytes | None) -> str:
    if data is None:
        return ""
    if len(data) > DIFF_MAX_BYTES or b"\0" in data:
        return f"({len(data)} bytes, not shown)\n"
    return data.decode("utf-8", errors="replace")


def _write(module: AnsibleModule, dest: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".mh-write-", dir=os.path.dirname(dest))
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        # atomic_move keeps an existing file's mode, owner and SELinux context, as the copy module does
        module.atomic_move(tmp, dest, unsafe_writes=module.params["unsafe_writes"])
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type="path", required=True),
            content=dict(type="str", required=True),
            snapshot=dict(type="str"),
            backup_dir=dict(type="path", default=DEFAULT_BACKUP_DIR),
        ),
        add_file_common_args=True,
        supports_check_mode=True,
    )
    dest = module.params["dest"]
    snapshot = module.params["snapshot"]
    backup_dir = os.path.normpath(module.params["backup_dir"])
    if not os.path.isabs(dest):
        module.fail_json(msg=f"dest {dest!r} is not absolute")
    dest = os.path.normpath(dest)
    if snapshot is not None:
        problem = check_name(snapshot)
        if problem:
            module.fail_json(msg=problem)
    parent = os.path.dirname(dest)
    if not os.path.isdir(parent):
        module.fail_json(msg=f"Destination directory {parent} does not exist")
    if os.path.isdir(dest):
        module.fail_json(msg=f"dest {dest!r} is a directory: cannot write content to it")

    data = module.params["content"].encode("utf-8", errors="surrogateescape")
    try:
        old = _current(dest)
    except OSError as err:
        module.fail_json(msg=f"cannot read {dest!r}: {err.strerror or err}")
    exists = os.path.lexists(dest)
    content_changed = old != data
    diffs = []
    if content_changed:
        diffs.append({"before_header": dest, "after_header": dest, "before": _text(old), "after": _text(data)})
    result = dict(changed=content_changed, dest=dest, checksum=hashlib.sha1(data).hexdigest(), snapshot=None)

    if module.check_mode:
        if exists:  # a missing file's attributes would all be new: the content change says it already
            attr_diff: dict = {"before": {}, "after": {}}
            file_args = module.load_file_common_arguments(module.params, path=dest)
            result["changed"] = module.set_fs_attributes_if_different(file_args, result["changed"], diff=attr_diff)
            if attr_diff["before"] or attr_diff["after"]:
                diffs.append(attr_diff)
        module.exit_json(diff=diffs, **result)

    if snapshot is not None:
        try:
            take_snapshot(backup_dir, snapshot, record_roots(backup_dir, [dest], []))
        except OSError as err:
            module.fail_json(
                msg=f"snapshot {snapshot!r} of {dest!r} in {backup_dir!r}: {err.filename or backup_dir}: "
                f"{err.strerror or err}"
            )
    try:
        if content_changed:
            _write(module, dest, data)
        attr_diff = {"before": {}, "after": {}}
        file_args = module.load_file_common_arguments(module.params, path=dest)
        result["changed"] = module.set_fs_attributes_if_different(file_args, result["changed"], diff=attr_diff)
    except OSError as err:
        # the snapshot stays: the file may have changed in part, the caller restores or drops it
        module.fail_json(msg=f"writing {dest!r}: {err.strerror or err}", snapshot=snapshot)
    if attr_diff["before"] or attr_diff["after"]:
        diffs.append(attr_diff)
    if snapshot is not None:
        if result["changed"]:
            result["snapshot"] = snapshot
            result["snapshot_dir"] = snapshot_dir(backup_dir, snapshot)
        else:
            delete_snapshot(backup_dir, snapshot)
    module.exit_json(diff=diffs, **result)


if __name__ == "__main__":
    main()
