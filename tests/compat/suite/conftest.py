"""conftest.py of a pytest-mh suite, written against pytest-mh's public API only."""

from __future__ import annotations

import pytest
from framework.config import ExampleMultihostConfig
from pytest_mh import MultihostItemData, MultihostPlugin

pytest_plugins = ("pytest_mh",)


def pytest_plugin_registered(plugin: object) -> None:
    if isinstance(plugin, MultihostPlugin):
        plugin.config_class = ExampleMultihostConfig


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "only_topology(name): run the test only on the named topology")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A custom marker that reads the test's topology from MultihostItemData."""
    marker = item.get_closest_marker("only_topology")
    if marker is None:
        return
    data = MultihostItemData.GetData(item)
    if data is None or data.topology_mark is None:
        return
    if data.topology_mark.name != marker.args[0]:
        pytest.skip(f"only on topology {marker.args[0]!r}")
