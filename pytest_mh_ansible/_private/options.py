"""The plugin's options: declaring the usual kinds, and reading them (command line, then ini file, then default)."""

from __future__ import annotations

from collections.abc import Collection

import pytest

__all__ = ["add_flag", "add_lines_ini", "add_repeatable", "add_seconds", "choice_option", "dest", "option_or_ini"]


def dest(name: str) -> str:
    """Where the value of option ``name`` is kept: ``--mh-lease-ttl`` in ``mh_lease_ttl``, as pytest would name it."""
    return name.removeprefix("--").replace("-", "_")


def add_flag(group: pytest.OptionGroup, name: str, *, help: str) -> None:
    """Add the on/off option ``name``: True when given, else False."""
    group.addoption(name, dest=dest(name), action="store_true", default=False, help=help)


def add_repeatable(group: pytest.OptionGroup, name: str, *, metavar: str, help: str) -> None:
    """Add the option ``name`` that may be given many times: the list of its values, in order (empty without it)."""
    group.addoption(name, dest=dest(name), action="append", default=[], metavar=metavar, help=help)


def add_seconds(group: pytest.OptionGroup, name: str, *, default: float | None, help: str) -> None:
    """Add the option ``name`` of a duration in seconds (a float; ``default`` without it)."""
    group.addoption(name, dest=dest(name), type=float, default=default, metavar="SECONDS", help=help)


def add_lines_ini(parser: pytest.Parser, name: str, help: str) -> None:
    """Add the ini option ``name`` that holds one value per line: the list of them (empty when unset)."""
    parser.addini(name, help, type="linelist", default=[])


def option_or_ini(config: pytest.Config, name: str, default: str) -> str:
    """The value of ``--mh-...`` (``dest=name``) when given, else the ini option ``name``, else ``default``.

    Example::

        root = option_or_ini(config, "mh_artifacts_dir", "artifacts")
    """
    return str(config.getoption(name) or str(config.getini(name) or default))


def choice_option(config: pytest.Config, name: str, default: str, choices: Collection[str]) -> str:
    """:func:`option_or_ini`, which must be one of ``choices``.

    :raises pytest.UsageError: The value is not one of ``choices`` (named with the ini option).
    """
    value = option_or_ini(config, name, default)
    if value not in choices:
        raise pytest.UsageError(f"ini option {name}: {value!r} is not one of {', '.join(choices)}")
    return value
