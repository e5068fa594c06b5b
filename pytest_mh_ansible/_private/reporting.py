"""Artifacts, per-test logs, reports, interruption and timeouts (the reporting side of the plugin)."""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["addoption", "configure"]


def addoption(group: Any, parser: pytest.Parser) -> None:
    """Add the reporting options to the plugin's option group (called from ``plugin.pytest_addoption``)."""


def configure(config: pytest.Config) -> None:
    """Register the reporting hooks when a session exists (called from ``plugin.pytest_configure``)."""
