"""Every use of pytest internals, in one place: the ``-i`` short option and a rootdir that ignores inventories.

pytest picks its rootdir and ini file before it loads plugins, from the paths on the command line.
At that time ``-i`` is not an option yet, so ``pytest -i /elsewhere/hosts.yml tests/`` makes
``/elsewhere/hosts.yml`` a "test path": the rootdir becomes a common ancestor of ``/elsewhere`` and
``tests/`` and the project's ``pytest.ini`` is not found. :func:`restore_setup` runs once the plugin
is loaded (in ``pytest_load_initial_conftests``, before conftests are imported) and, if the
inventory arguments changed pytest's choice, makes the choice pytest makes without them: rootdir,
ini file and its values, the ini's ``addopts`` and ``pythonpath``, the conftest cut-off directory.

Private pytest names used (read in pytest 8.0, 8.4 and 9.2; ``tests/unit/test_pytest_internals.py``
checks that each exists and that the Config ends up as pytest would have made it,
``tests/functional/test_rootdir.py`` runs pytest as users do):

- ``OptionGroup._addoption`` (a lowercase short option; pytest-xdist takes ``-n`` the same way);
- ``_pytest.config.findpaths.determine_setup``, and ``parse_override_ini`` where it exists (pytest 9);
- ``Config._rootpath``, ``_inipath``, ``inicfg`` (pytest 8) or ``_inicfg`` and
  ``_ignored_config_files`` (pytest 9), ``_inicache``, ``_checkversion``, ``_validate_plugins``,
  ``_configure_python_path`` and ``_unconfigure_python_path`` (pytest 8.1+; 8.0 adds
  ``pythonpath`` in a later ``pytest_load_initial_conftests`` hook, which sees the right ini file).
"""

from __future__ import annotations

import argparse
import copy
import inspect
import os
import shlex
from collections.abc import Sequence
from typing import Any

import pytest
from _pytest.config import findpaths

__all__ = ["LONG_OPTION", "SHORT_OPTION", "add_inventory_option", "restore_setup", "split_inventory_args"]

SHORT_OPTION = "-i"
LONG_OPTION = "--mh-inventory"


def add_inventory_option(group: pytest.OptionGroup, **kwargs: Any) -> bool:
    """Add ``-i/--mh-inventory`` to ``group``, or ``--mh-inventory`` alone if another plugin took ``-i``.

    pytest reserves lowercase short options for itself; its private ``_addoption`` lets plugins
    take one anyway, as pytest-xdist does for ``-n``.

    :returns: Whether ``-i`` is ours.
    """
    try:
        group._addoption(SHORT_OPTION, LONG_OPTION, **kwargs)
    except (ValueError, argparse.ArgumentError):
        group.addoption(LONG_OPTION, **kwargs)
        return False
    return True


def split_inventory_args(args: Sequence[str], *, short: bool = True) -> tuple[list[str], list[str]]:
    """Split command-line ``args`` into the inventory options' values and everything else.

    Knows every form argparse accepts for the option: ``-i PATH``, ``-iPATH``, ``--mh-inventory PATH``
    and ``--mh-inventory=PATH``; nothing after ``--`` is an option.

    Example::

        split_inventory_args(["-i", "/inv/hosts.yml", "-x", "tests"])  # (["-x", "tests"], ["/inv/hosts.yml"])

    :param short: Whether ``-i`` is the plugin's (see :func:`add_inventory_option`).
    :returns: ``(other arguments, inventory values)``.
    """
    rest: list[str] = []
    values: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            rest.extend(args[index:])
            break
        if arg == LONG_OPTION or (short and arg == SHORT_OPTION):
            if index + 1 < len(args):
                values.append(args[index + 1])
            index += 2
            continue
        if arg.startswith(LONG_OPTION + "="):
            values.append(arg[len(LONG_OPTION) + 1 :])
        elif short and arg.startswith(SHORT_OPTION) and not arg.startswith("--"):
            values.append(arg[len(SHORT_OPTION) :])
        else:
            rest.append(arg)
        index += 1
    return rest, values


def restore_setup(config: pytest.Config, args: list[str], parser: pytest.Parser) -> bool:
    """Make the rootdir and ini file those pytest picks without the inventory arguments.

    Called from a ``pytest_load_initial_conftests`` wrapper that runs first, with the hook's
    ``args`` (changed in place: the right ini file's ``addopts`` replace the wrong one's).
    Does nothing when there is no inventory argument, when ``--rootdir``/``-c`` decide, or when
    the inventory arguments did not change pytest's choice.

    :returns: Whether anything changed.
    """
    # What pytest looked at to pick the rootdir: PYTEST_ADDOPTS, then the command line. After
    # them in ``args`` come the ini file's addopts (unless Config.parse ran with addopts=False).
    env = shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    seen = env + list(config.invocation_params.args)
    ini_addopts_applied = len(args) >= len(seen) and args[len(args) - len(seen) :] == seen
    if not ini_addopts_applied:
        seen = list(config.invocation_params.args)
    stripped, values = split_inventory_args(seen, short=_short_option_is_ours(config, parser))
    if not values:
        return False
    namespace, _ = parser.parse_known_and_unknown_args(stripped, namespace=copy.copy(config.option))
    setup = _determine_setup(config, namespace)
    rootpath, inipath = setup[0], setup[1]
    if rootpath == config.rootpath and inipath == config.inipath:
        return False

    python_path = hasattr(config, "_configure_python_path")
    if python_path:
        config._unconfigure_python_path()  # the wrong ini file's pythonpath
    config._rootpath = rootpath
    config._inipath = inipath
    if len(setup) > 3:  # pytest 9
        config._inicfg = setup[2]
        config._ignored_config_files = setup[3]
    else:
        config.inicfg = setup[2]  # type: ignore[misc,unused-ignore]  # pytest 8: a plain attribute
    config._inicache.clear()
    parser.extra_info["rootdir"] = str(rootpath)
    parser.extra_info["inifile"] = str(inipath)
    if ini_addopts_applied:
        ini_addopts = [str(a) for a in config.getini("addopts")]
        args[:] = ini_addopts + seen
        config.pluginmanager.consider_preparse(ini_addopts, exclude_only=False)
    config.known_args_namespace = parser.parse_known_args(args, namespace=copy.copy(config.option))
    parse_override_ini = getattr(findpaths, "parse_override_ini", None)
    if parse_override_ini is not None and len(setup) > 3:
        # pytest 9: "-o" options in addopts apply on top of the ini file
        overrides = parse_override_ini(config.known_args_namespace.override_ini)
        if overrides:
            config._inicfg.update(overrides)
            config._inicache.clear()
    config._checkversion()
    if python_path:
        config._configure_python_path()
    config._validate_plugins()
    if config.known_args_namespace.confcutdir is None:
        config.known_args_namespace.confcutdir = str(inipath.parent if inipath is not None else rootpath)
    return True


def _short_option_is_ours(config: pytest.Config, parser: pytest.Parser) -> bool:
    """Whether ``-i`` means ``--mh-inventory`` (another plugin may have taken it first)."""
    namespace = parser.parse_known_args([SHORT_OPTION, "probe"], namespace=copy.copy(config.option))
    return list(getattr(namespace, "mh_inventory", None) or [])[-1:] == ["probe"]


def _determine_setup(config: pytest.Config, namespace: argparse.Namespace) -> tuple[Any, ...]:
    kwargs: dict[str, Any] = {
        "inifile": namespace.inifilename,
        "args": list(namespace.file_or_dir),
        "rootdir_cmd_arg": namespace.rootdir or None,
        "invocation_dir": config.invocation_params.dir,
    }
    if "override_ini" in inspect.signature(findpaths.determine_setup).parameters:
        kwargs["override_ini"] = namespace.override_ini
    result: tuple[Any, ...] = findpaths.determine_setup(**kwargs)
    return result
