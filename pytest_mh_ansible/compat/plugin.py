"""The pytest-mh compatibility plugin: ``-p pytest_mh_ansible.compat.plugin`` (opt-in, see docs).

Loading it serves the ``pytest_mh`` import name from this layer, registers pytest-mh's plugin
object (:class:`~pytest_mh_ansible.compat.MultihostPlugin`, so that ``pytest_plugin_registered``
can set ``config_class``; it makes the session's hosts and roles through the suite's
``MultihostConfig``), and adds pytest-mh's ``mh_config`` and ``mh_logger`` fixtures.
"""

from __future__ import annotations

import pytest

from . import _alias
from ._mode_check import PLUGIN_NAME as MODE_CHECK_PLUGIN
from ._mode_check import ModeCheck
from ._plugin import register
from .fixtures import mh_config, mh_logger

__all__ = ["mh_config", "mh_logger"]

# First: the layer wins over an installed pytest-mh while this plugin is loaded.
_alias.install()


def pytest_configure(config: pytest.Config) -> None:
    register(config)
    # the findings check of Coredumpd and Auditd (their modes); it follows the running test
    config.pluginmanager.register(ModeCheck(), MODE_CHECK_PLUGIN)
