"""The ``pytest_mh`` import name, served by this layer: an import hook, installed only on request."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

__all__ = ["ALIAS", "TARGET", "install", "installed", "real_pytest_mh_installed"]

ALIAS = "pytest_mh"
TARGET = "pytest_mh_ansible.compat"


class _AliasLoader(importlib.abc.Loader):
    """Gives the layer's module for ``pytest_mh[.x]``: one module object under both names."""

    def __init__(self, target: str) -> None:
        self._target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self._target)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the target module ran when it was imported."""


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``pytest_mh`` and its submodules before any other finder (so before a real pytest-mh)."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != ALIAS and not fullname.startswith(ALIAS + "."):
            return None
        real = TARGET + fullname[len(ALIAS) :]
        if importlib.util.find_spec(real) is None:
            return None
        is_package = hasattr(importlib.import_module(real), "__path__")
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real), is_package=is_package)


_FINDER = _AliasFinder()


def real_pytest_mh_installed() -> bool:
    """Whether the real pytest-mh is importable too (it is then hidden while the alias is installed)."""
    for finder in sys.meta_path:
        if finder is _FINDER:
            continue
        find = getattr(finder, "find_spec", None)
        if find is not None and find(ALIAS, None) is not None:
            return True
    return False


def installed() -> bool:
    return _FINDER in sys.meta_path


def install() -> None:
    """Serve ``import pytest_mh`` (and ``pytest_mh.conn``, ...) from this layer; safe to call twice.

    :raises ImportError: A real ``pytest_mh`` was imported already in this process.
    """
    loaded = sys.modules.get(ALIAS)
    if loaded is not None and not getattr(loaded, "__name__", "").startswith(TARGET):
        raise ImportError(
            f"pytest-mh-ansible's pytest-mh compatibility layer: the real pytest-mh was imported already "
            f"({getattr(loaded, '__file__', '?')}); load the layer first (-p pytest_mh_ansible.compat.plugin) "
            "or uninstall pytest-mh"
        )
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
