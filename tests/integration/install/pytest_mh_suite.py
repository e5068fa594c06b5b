"""A small pytest-mh suite set up as real ones are: ``pytest_plugins = ("pytest_mh",)``, ``mhc.yaml``, strict warnings.

The install tests run it, unchanged and with pytest-mh's own command line (:data:`COMMAND_LINE`), in
virtualenvs with and without a real pytest-mh. Its tests need no host: a topology that the host
file cannot fill (pytest-mh deselects it, this project skips it) and a test that prints which
``pytest_mh`` it got.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

__all__ = ["COMMAND_LINE", "pytest_mh_origin", "summary", "write_suite"]

COMMAND_LINE = (
    "--mh-config=mhc.yaml",
    "--mh-lazy-ssh",
    "--mh-collect-logs=never",
    "--mh-ignore-preferred-topology",
    "--mh-collect-artifacts=on-failure",
    "-s",
)
"""pytest-mh's options, as a CI job of a pytest-mh suite gives them."""

FILES = {
    "pytest.ini": """\
        [pytest]
        addopts = -p no:cacheprovider --strict-markers
        filterwarnings =
            error
    """,
    "mhc.yaml": """\
        domains:
        - id: test
          hosts:
          - hostname: client1.test
            role: client
            conn: {type: ssh, host: 192.0.2.1, username: root, password: Secret123}
    """,
    "conftest.py": """\
        from pytest_mh import MultihostConfig, MultihostDomain, MultihostHost, MultihostPlugin, MultihostRole

        pytest_plugins = ("pytest_mh",)

        class Domain(MultihostDomain):
            @property
            def role_to_host_class(self):
                return {"*": MultihostHost}

            @property
            def role_to_role_class(self):
                return {"*": MultihostRole}

        class Config(MultihostConfig):
            @property
            def id_to_domain_class(self):
                return {"*": Domain}

        def pytest_plugin_registered(plugin):
            if isinstance(plugin, MultihostPlugin):
                plugin.config_class = Config
    """,
    "test_suite.py": """\
        import pytest
        import pytest_mh
        from pytest_mh import Topology, TopologyDomain, TopologyMark

        TWO = TopologyMark("two", Topology(TopologyDomain("test", client=2)),
                           fixtures=dict(first="test.client[0]"))

        def test_origin():
            print("PYTEST_MH_IS", pytest_mh.__name__, pytest_mh.__file__)

        @pytest.mark.topology(TWO)
        @pytest.mark.preferred_topology(TWO)
        def test_two(first):
            pass
    """,
}


def write_suite(directory: Path, *, without_pytest_plugins: bool = False) -> Path:
    """Write the suite into ``directory``; ``without_pytest_plugins``: its CI passes ``-p pytest_mh`` instead."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, template in FILES.items():
        text = textwrap.dedent(template)
        if without_pytest_plugins:
            text = text.replace('pytest_plugins = ("pytest_mh",)\n', "")
        (directory / name).write_text(text)
    return directory


def pytest_mh_origin(stdout: str) -> str:
    """The module name and file of the ``pytest_mh`` the suite imported."""
    found = re.search(r"^.*PYTEST_MH_IS (\S+ \S+)", stdout, re.MULTILINE)
    assert found, f"the suite did not print its pytest_mh:\n{stdout[-3000:]}"
    return found.group(1)


def summary(stdout: str) -> str:
    """pytest's last line without its time: ``1 passed, 1 deselected``."""
    last = stdout.strip().splitlines()[-1]
    return re.sub(r"\s+in [0-9.]+s.*$", "", last).strip("= ")
