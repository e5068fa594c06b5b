"""conftest.py of the replica suite: pytest-mh and the framework's plugins, and the framework's config class."""

from __future__ import annotations

from framework.config import ReplicaMultihostConfig
from pytest_mh import MultihostPlugin

pytest_plugins = ("pytest_mh", "framework.markers")


def pytest_plugin_registered(plugin: object) -> None:
    if isinstance(plugin, MultihostPlugin):
        plugin.config_class = ReplicaMultihostConfig
