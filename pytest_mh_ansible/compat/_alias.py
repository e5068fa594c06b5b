"""The ``pytest_mh`` import name, served by this layer (the hook itself is ``_private/alias.py``).

Without a real pytest-mh, the plugin puts the hook last at every pytest start, so ``import
pytest_mh`` and ``pytest_plugins = ("pytest_mh",)`` find this layer; ``-p
pytest_mh_ansible.compat.plugin`` puts it first, so the layer wins over an installed pytest-mh.
"""

from __future__ import annotations

from .._private.alias import ALIAS, TARGET, install, installed, real_pytest_mh_installed, serves_first

__all__ = ["ALIAS", "TARGET", "install", "installed", "real_pytest_mh_installed", "serves_first"]
