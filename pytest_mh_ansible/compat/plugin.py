"""The pytest-mh compatibility plugin: where pytest-mh is not installed, a suite that registers ``pytest_mh`` gets it.

Where pytest-mh is installed too, ``-p pytest_mh_ansible.compat.plugin`` asks for it (see docs).

Loading it serves the ``pytest_mh`` import name from this layer, registers pytest-mh's plugin
object (:class:`~pytest_mh_ansible.compat.MultihostPlugin`, so that ``pytest_plugin_registered``
can set ``config_class``; it makes the session's hosts and roles through the suite's
``MultihostConfig``), and adds pytest-mh's ``mh_config`` and ``mh_logger`` fixtures.

PYTEST_DONT_REWRITE: it may be imported before pytest registers it (a suite's imports); pytest would
warn that it cannot rewrite its asserts (it has none), and ``filterwarnings = error`` suites would stop.
"""

from __future__ import annotations

import pytest

from . import _alias
from ._mode_check import PLUGIN_NAME as MODE_CHECK_PLUGIN
from ._mode_check import ModeCheck
from ._plugin import register
from .fixtures import mh_config, mh_logger

__all__ = ["mh_config", "mh_logger"]

# Asked before the hook goes first (then it hides the real one). Said once in the header, never as a
# warning: a suite's filterwarnings = error would turn a warning into a failure to load this plugin.
_REAL_PYTEST_MH_TOO = _alias.real_pytest_mh_installed()
# First: the layer wins over an installed pytest-mh while this plugin is loaded.
_alias.install()


def pytest_report_header(config: pytest.Config) -> list[str]:
    if not _REAL_PYTEST_MH_TOO:
        return []
    return [
        "mh-ansible compat: pytest-mh is installed too; in this run 'import pytest_mh' is pytest-mh-ansible's "
        "compatibility layer (-p pytest_mh_ansible.compat.plugin)"
    ]


def pytest_configure(config: pytest.Config) -> None:
    register(config)
    # the findings check of Coredumpd and Auditd (their modes); it follows the running test
    config.pluginmanager.register(ModeCheck(), MODE_CHECK_PLUGIN)
