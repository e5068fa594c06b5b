"""Unit tests of plugins/module_utils/_fsstate.py, runnable with ansible-test units or plain pytest."""

from __future__ import annotations

import os

from ansible_collections.mh_ansible.rollback.plugins.module_utils import _fsstate, _snapshots


def _record(root, blobs):
    records = _fsstate.walk(str(root), hash_content=False)
    for rec in records:
        if rec["type"] == _fsstate.FILE:
            rec["sha256"], _ = _snapshots.store_blob(rec["path"], str(blobs))
    return records


def test_is_excluded__matches_name_relative_and_full_path():
    assert _fsstate.is_excluded("/r", "/r/a/x.log", ["*.log"])
    assert _fsstate.is_excluded("/r", "/r/a/b", ["a/b"])
    assert _fsstate.is_excluded("/r", "/r/a/b", ["/r/a/*"])
    assert not _fsstate.is_excluded("/r", "/r/a/b", ["c"])


def _fnmatch_excluded(root, path, patterns):
    """The exclusion as each glob alone says it (fnmatchcase on the name, the relative and the full path)."""
    import fnmatch

    forms = (os.path.basename(path), os.path.relpath(path, root), path)
    return any(fnmatch.fnmatchcase(form, pattern) for pattern in patterns for form in forms)


def test_exclusion__one_expression_says_what_each_glob_says(tmp_path):
    patterns = ["*.log", "conf.d/deep", "/nowhere/*", "[ab]?c", "x[!y]z", "other.d/?", "a*b*c", "exact", "sp ace*"]
    tree = {
        "app.log": "", "abc": "", "bbc": "", "cbc": "", "xaz": "", "xyz": "", "exact": "", "exactly": "",
        "sp ace": "", "aXbYc": "", "conf.d/a.conf": "", "conf.d/deep/b.conf": "", "other.d/x": "", "keep/exact/z": "",
    }  # fmt: skip
    for rel in tree:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    everything = {rec["path"] for rec in _fsstate.walk(str(tmp_path), hash_content=False)}
    kept = {rec["path"] for rec in _fsstate.walk(str(tmp_path), exclude=patterns, hash_content=False)}
    for path in everything - {str(tmp_path)}:
        expected = _fnmatch_excluded(str(tmp_path), path, patterns)
        assert _fsstate.is_excluded(str(tmp_path), path, patterns) == expected, path
        parents = [p for p in everything if path.startswith(p + "/") and p != str(tmp_path)]
        hidden = expected or any(_fnmatch_excluded(str(tmp_path), p, patterns) for p in parents)
        assert (path not in kept) == hidden, path  # an excluded directory takes what is below it along
    assert str(tmp_path / "conf.d" / "a.conf") in kept
    assert str(tmp_path / "conf.d" / "deep") not in kept  # by its path relative to the root only
    assert str(tmp_path / "other.d" / "x") not in kept
    assert str(tmp_path / "xyz") in kept
    assert str(tmp_path / "xaz") not in kept
    assert _fsstate.exclusion([]) is None


def test_describe__says_type_mode_owner_and_size():
    rec = {"path": "/x", "type": "file", "mode": 0o4755, "uid": 0, "gid": 0, "size": 3}
    assert _fsstate.describe(rec).startswith("file mode 4755 owner ")
    assert _fsstate.describe({"path": "/x", "type": "absent"}) == "absent"


def test_store_blob__stores_identical_content_once(tmp_path):
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    (tmp_path / "a").write_bytes(b"same")
    (tmp_path / "b").write_bytes(b"same")
    first = _snapshots.store_blob(str(tmp_path / "a"), str(blobs))
    second = _snapshots.store_blob(str(tmp_path / "b"), str(blobs))
    assert first[0] == second[0]
    assert (first[1], second[1]) == (4, 0)
    assert os.listdir(str(blobs)) == [first[0]]


def test_restore__sets_directory_modes_after_filling_them(tmp_path):
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    root = tmp_path / "ro"
    root.mkdir()
    (root / "f").write_text("f")
    root.chmod(0o555)
    records = _record(root, blobs)
    root.chmod(0o755)
    (root / "f").unlink()
    os.rmdir(str(root))
    _fsstate.apply_restore(_fsstate.plan_restore(records), lambda sha: str(blobs / sha))
    assert (root / "f").read_text() == "f"
    assert oct(root.stat().st_mode & 0o7777) == oct(0o555)
    root.chmod(0o755)


def test_restore__a_socket_comes_back_as_a_socket_with_its_mode(tmp_path):
    import socket
    import stat

    blobs = tmp_path / "blobs"
    blobs.mkdir()
    root = tmp_path / "run"
    root.mkdir()
    path = root / "app.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.close()
    path.chmod(0o640)
    records = _record(root, blobs)
    path.unlink()
    warnings = _fsstate.apply_restore(_fsstate.plan_restore(records), lambda sha: str(blobs / sha))
    assert warnings == []
    assert stat.S_ISSOCK(path.lstat().st_mode)
    assert oct(path.lstat().st_mode & 0o7777) == oct(0o640)


def test_restore__a_hard_link_replaced_by_a_new_file__linked_again_to_its_inode(tmp_path):
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    root = tmp_path / "etc"
    root.mkdir()
    (root / "a.conf").write_text("linked\n")
    os.link(str(root / "a.conf"), str(root / "b.conf"))
    records = _record(root, blobs)
    replacement = root / ".new"
    replacement.write_text("changed\n")
    os.rename(str(replacement), str(root / "a.conf"))  # what copy and lineinfile do: a new inode
    warnings = _fsstate.apply_restore(_fsstate.plan_restore(records), lambda sha: str(blobs / sha))
    assert warnings == []
    assert (root / "a.conf").stat().st_ino == (root / "b.conf").stat().st_ino
    assert (root / "a.conf").read_text() == "linked\n"


def test_restore__extended_attributes_come_back_after_a_rewrite(tmp_path):
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    root = tmp_path / "etc"
    root.mkdir()
    path = root / "x.conf"
    path.write_text("x\n")
    try:
        os.setxattr(str(path), "user.mh", b"kept")
    except OSError:
        import pytest

        pytest.skip("this file system has no user extended attributes")
    records = _record(root, blobs)
    path.unlink()
    path.write_text("changed\n")
    os.setxattr(str(path), "user.other", b"added")
    _fsstate.apply_restore(_fsstate.plan_restore(records), lambda sha: str(blobs / sha))
    assert os.listxattr(str(path)) == ["user.mh"]
    assert os.getxattr(str(path), "user.mh") == b"kept"
