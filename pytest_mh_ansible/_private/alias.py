"""The import hook behind the ``pytest_mh`` name: the layer's modules under pytest-mh's names, at two priorities.

It lives outside ``compat/`` so that the plugin can put it in place at every pytest start without
importing the layer: the layer is imported only when something imports ``pytest_mh``.

* :func:`install` (``first=True``, what ``-p pytest_mh_ansible.compat.plugin`` does) puts the hook
  before every other finder: ``pytest_mh`` is the layer even when a real pytest-mh is installed.
* ``install(first=False)`` (what the plugin does at every start) puts it after every other finder:
  it serves ``pytest_mh`` only when nothing else can, so a real pytest-mh always wins.
* The wheel also installs ``pytest_mh_alias.pth``, a one-line finder put last at interpreter start
  that asks :func:`find_spec`: pytest imports ``-p pytest_mh`` before any plugin is loaded.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

__all__ = ["ALIAS", "TARGET", "find_spec", "install", "installed", "real_pytest_mh_installed", "serves_first"]

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
    """Finds ``pytest_mh`` and its submodules as the layer's (``pytest_mh.conn`` is ``compat.conn``)."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != ALIAS and not fullname.startswith(ALIAS + "."):
            return None
        real = TARGET + fullname[len(ALIAS) :]
        if importlib.util.find_spec(real) is None:
            return None
        is_package = hasattr(importlib.import_module(real), "__path__")
        if fullname == ALIAS:
            # Reached last, this hook found no real pytest-mh. It now answers first: else the path finder
            # would load pytest_mh.conn from the layer's directory as a second, broken copy of compat.conn.
            _put_first()
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real), is_package=is_package)


_FINDER = _AliasFinder()


def find_spec(fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
    """The hook's answer; the one-line finder of the wheel's ``pytest_mh_alias.pth`` asks it."""
    return _FINDER.find_spec(fullname, path, target)


def real_pytest_mh_installed() -> bool:
    """Whether a real pytest-mh is importable (found by a finder other than this hook and the ``.pth``'s)."""
    for finder in sys.meta_path:
        if finder is _FINDER:
            continue
        find = getattr(finder, "find_spec", None)
        spec = find(ALIAS, None) if find is not None else None
        if spec is not None and not isinstance(spec.loader, _AliasLoader):
            return True
    return False


def installed() -> bool:
    """Whether the hook is in place (at either priority)."""
    return _FINDER in sys.meta_path


def serves_first() -> bool:
    """Whether the hook comes before every other finder (the layer asked for explicitly)."""
    return bool(sys.meta_path) and sys.meta_path[0] is _FINDER


def install(*, first: bool = True) -> None:
    """Serve ``import pytest_mh`` (and ``pytest_mh.conn``, ...) from the layer; safe to call again.

    :param first: Before every other finder, hiding a real pytest-mh (the layer asked for); False:
        after them, only where no real pytest-mh is installed. A hook put last is moved first when
        asked for later, never the other way round.
    :raises ImportError: ``first`` and a real ``pytest_mh`` was imported already in this process.
    """
    if not first:
        if _FINDER not in sys.meta_path:
            sys.meta_path.append(_FINDER)
        return
    loaded = sys.modules.get(ALIAS)
    if loaded is not None and not getattr(loaded, "__name__", "").startswith(TARGET):
        raise ImportError(
            f"pytest-mh-ansible's pytest-mh compatibility layer: the real pytest-mh was imported already "
            f"({getattr(loaded, '__file__', '?')}); load the layer first (-p pytest_mh_ansible.compat.plugin) "
            "or uninstall pytest-mh"
        )
    _put_first()


def _put_first() -> None:
    if not serves_first():
        if _FINDER in sys.meta_path:
            sys.meta_path.remove(_FINDER)
        sys.meta_path.insert(0, _FINDER)
