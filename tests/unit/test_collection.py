"""The shipped collection is found as package data, wherever the package is installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mh_ansible._private.ansible import collection
from pytest_mh_ansible.errors import MultihostError


def test_collection__found_beside_the_package_as_an_ansible_collections_path() -> None:
    root = collection.collections_dir()
    assert (root / "ansible_collections" / "mh_ansible" / "rollback" / "plugins" / "modules" / "snapshot.py").is_file()


def test_collection__missing_collection_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collection.importlib.resources, "files", lambda package: tmp_path)
    collection.collections_dir.cache_clear()
    try:
        with pytest.raises(MultihostError, match=r"mh_ansible.rollback collection is not installed .*galaxy.yml"):
            collection.collections_dir()
    finally:
        collection.collections_dir.cache_clear()
