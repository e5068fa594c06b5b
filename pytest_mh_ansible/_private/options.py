"""Reading the plugin's options: the command line first, then the ini file, then the default."""

from __future__ import annotations

from collections.abc import Collection

import pytest

__all__ = ["choice_option", "option_or_ini"]


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
