"""The hooks that pytest-mh-ansible adds to pytest (``pytest_addhooks``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .registry import Registry

hookspec = pytest.hookspec


@hookspec
def pytest_mh_register(registry: Registry) -> None:
    """Register the project's role, host and topology mark classes.

    Called once per session, after collection, in every ``conftest.py`` and plugin that
    implements it.

    Example::

        def pytest_mh_register(registry):
            registry.role("client", Client)
    """
