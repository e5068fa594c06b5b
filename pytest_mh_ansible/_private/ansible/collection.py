"""Where the ``mh_ansible.rollback`` collection that ships with the package lives on disk.

The collection is package data: the wheel carries it under ``pytest_mh_ansible/_data/collections``,
and a source checkout has a symlink there to the repository's ``collections/`` directory. It is
found through :mod:`importlib.resources`, so an installed wheel, an editable install and a
checkout on ``sys.path`` all give Ansible the same directory.
"""

from __future__ import annotations

import functools
import importlib.resources
from pathlib import Path

from ...errors import MultihostError

__all__ = ["COLLECTION", "collections_dir"]

COLLECTION = "mh_ansible.rollback"
"""The fully qualified name of the shipped collection."""


@functools.cache
def collections_dir() -> Path:
    """The directory that holds ``ansible_collections/mh_ansible/rollback`` (an Ansible collections path).

    :raises MultihostError: The package was installed without its collection (a broken install),
        or from a zip file, which Ansible cannot load collections from.
    """
    root = importlib.resources.files("pytest_mh_ansible").joinpath("_data", "collections")
    path = Path(str(root))
    galaxy = path / "ansible_collections" / "mh_ansible" / "rollback" / "galaxy.yml"
    if not isinstance(root, Path) or not galaxy.is_file():
        raise MultihostError(
            f"the {COLLECTION} collection is not installed with pytest-mh-ansible (expected {galaxy}); "
            "reinstall the package from a wheel or a source checkout"
        )
    return path.resolve()
