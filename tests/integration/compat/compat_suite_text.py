"""The conftest of the small pytest-mh-style suites that the compat lab tests run (``pytest_mh`` imports only).

Each suite differs only in the utilities its role holds: :func:`conftest` writes the rest (a
domain and a config class set through ``pytest_plugin_registered``, as pytest-mh suites do).
"""

from __future__ import annotations

import textwrap

__all__ = ["conftest"]

_TEMPLATE = """\
from pytest_mh import MultihostConfig, MultihostDomain, MultihostHost, MultihostPlugin, MultihostRole
{imports}

pytest_plugins = ("pytest_mh",)


class Role(MultihostRole):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
{utilities}


class Domain(MultihostDomain):
    @property
    def role_to_host_class(self):
        return {{"*": MultihostHost}}

    @property
    def role_to_role_class(self):
        return {{"*": Role}}


class Config(MultihostConfig):
    @property
    def id_to_domain_class(self):
        return {{"*": Domain}}


def pytest_plugin_registered(plugin):
    if isinstance(plugin, MultihostPlugin):
        plugin.config_class = Config
"""


def conftest(imports: str, utilities: str) -> str:
    """The suite's conftest.py: ``imports`` (lines), and ``utilities`` (lines of the role's ``__init__``).

    Example::

        conftest("from pytest_mh.utils.firewall import Firewalld", "self.firewall = Firewalld(self.host)")
    """
    body = textwrap.indent(textwrap.dedent(utilities).strip(), " " * 8)
    return _TEMPLATE.format(imports=textwrap.dedent(imports).strip(), utilities=body)
