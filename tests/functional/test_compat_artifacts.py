"""pytest-mh's artifacts through the layer: what hosts, roles, utilities and controllers list is fetched (pytester)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

CONFTEST = textwrap.dedent("""\
    import os
    from pytest_mh import (MultihostConfig, MultihostDomain, MultihostHost, MultihostPlugin, MultihostRole,
                           MultihostUtility, TopologyController)

    DATA = os.environ["MH_TEST_DATA"]

    def path(name):
        full = os.path.join(DATA, name)
        with open(full, "w") as out:
            out.write(name)
        return full

    class Notes(MultihostUtility):
        def get_artifacts_list(self, host, artifacts_type):
            return {path(f"utility-{artifacts_type}.txt")}

    class ClientHost(MultihostHost):
        def pytest_setup(self):
            self.artifacts.test.add(path("host-test.txt"))
            self.artifacts.pytest_setup.add(path("host-pytest-setup.txt"))

        def get_artifacts_list(self, host, artifacts_type):
            assert host is self
            return super().get_artifacts_list(host, artifacts_type) | {path(f"host-extra-{artifacts_type}.txt")}

    class Client(MultihostRole):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.notes = Notes(self.host)
            self.artifacts.add(path("role.txt"))

    class Controller(TopologyController):
        def set_artifacts(self, client):
            self.artifacts.topology_setup[client] = {path("controller-topology-setup.txt")}
            self.artifacts.test[client] = {path("controller-test.txt")}

    class Domain(MultihostDomain):
        @property
        def role_to_host_class(self):
            return {"client": ClientHost, "*": MultihostHost}

        @property
        def role_to_role_class(self):
            return {"client": Client, "*": MultihostRole}

    class Config(MultihostConfig):
        @property
        def id_to_domain_class(self):
            return {"*": Domain}

    def pytest_plugin_registered(plugin):
        if isinstance(plugin, MultihostPlugin):
            plugin.config_class = Config
""")

TESTS = textwrap.dedent("""\
    import pytest
    from conftest import Controller
    from pytest_mh import Topology, TopologyDomain, TopologyMark

    CLIENT = TopologyMark("client", Topology(TopologyDomain("app", client=1)),
                          controller=Controller(), fixtures=dict(client="app.client[0]"))

    @pytest.mark.topology(CLIENT)
    def test_fails(client):
        assert False, "collect my artifacts"
""")


@pytest.fixture
def suite(project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path_factory.mktemp("data")
    monkeypatch.setenv("MH_TEST_DATA", str(data))
    project.makeconftest(CONFTEST)
    project.makepyfile(test_suite=TESTS)
    return data


def _fetched(root: Path) -> set[str]:
    return {path.name for path in root.rglob("*.txt")} if root.exists() else set()


def test_compat_artifacts__every_get_artifacts_list_is_asked_and_its_files_fetched(
    project: pytest.Pytester, suite: Path
) -> None:
    result = project.runpytest_subprocess(
        "-p", "pytest_mh_ansible.compat.plugin", "-i", "hosts.ini", "--mh-artifacts-dir", "art"
    )
    result.assert_outcomes(failed=1)
    art = project.path / "art"
    test_dir = art / "tests" / "test_suite" / "test_fails[client]" / "client" / "client1"
    assert _fetched(test_dir) == {
        "host-test.txt",
        "host-extra-test.txt",
        "role.txt",
        "utility-test.txt",
        "controller-test.txt",
    }
    # on-failure: the topology's setup passed, so its artifacts were not fetched
    assert not (art / "topologies").exists()


def test_compat_artifacts__always_fetches_each_phase_with_pytest_mh_phase_names(
    project: pytest.Pytester, suite: Path
) -> None:
    result = project.runpytest_subprocess(
        "-p",
        "pytest_mh_ansible.compat.plugin",
        "-i",
        "hosts.ini",
        "--mh-artifacts-dir",
        "art",
        "--mh-collect-artifacts",
        "always",
    )
    result.assert_outcomes(failed=1)
    art = project.path / "art"
    assert _fetched(art / "topologies" / "client" / "client1") == {
        "controller-topology-setup.txt",
        "host-extra-topology_setup.txt",
    } | {"host-extra-topology_teardown.txt"}
    assert _fetched(art / "session" / "client1") >= {"host-pytest-setup.txt", "host-extra-pytest_setup.txt"}


def test_compat_artifacts__never_asks_nobody(project: pytest.Pytester, suite: Path) -> None:
    result = project.runpytest_subprocess(
        "-p", "pytest_mh_ansible.compat.plugin", "-i", "hosts.ini", "--mh-collect-artifacts", "never"
    )
    result.assert_outcomes(failed=1)
    assert not (project.path / "artifacts").exists()
