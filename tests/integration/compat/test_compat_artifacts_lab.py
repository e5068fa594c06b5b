"""pytest-mh's artifacts and ``conn.host`` through the compatibility layer, on a lab host.

A tiny pytest-mh-style suite (``pytest_mh`` imports only) makes files on the host and lists them the
ways pytest-mh suites do: ``host.artifacts.test.add(glob)``, a role's ``artifacts``, a utility's and a
topology controller's ``get_artifacts_list``. With ``--mh-collect-artifacts always`` every one of them
must land in the test's artifacts directory, fetched from the host. The suite also opens a TCP
connection of its own to ``host.conn.host`` (the lab host's ``ansible_host``), as frameworks do with
their LDAP or Kerberos clients.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

import pytest
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

pytestmark = pytest.mark.integration

LAB_NAME = lab_name("mhart")

CONFTEST = textwrap.dedent("""\
    from pytest_mh import (MultihostConfig, MultihostDomain, MultihostHost, MultihostPlugin, MultihostRole,
                           MultihostUtility, TopologyController)

    pytest_plugins = ("pytest_mh",)
    DIR = "/tmp/mh-compat-artifacts"


    class Notes(MultihostUtility):
        def get_artifacts_list(self, host, artifacts_type):
            return {f"{DIR}/utility-{artifacts_type}.txt"} if artifacts_type == "test" else set()


    class ClientHost(MultihostHost):
        def pytest_setup(self):
            self.artifacts.test.add(f"{DIR}/host-*.log")


    class Client(MultihostRole):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.notes = Notes(self.host)
            self.artifacts.add(f"{DIR}/role.txt")

        def setup(self):
            names = ["host-a.log", "host-b.log", "role.txt", "utility-test.txt", "controller.txt", "unlisted.txt"]
            self.host.conn.run(f"mkdir -p {DIR} && cd {DIR} && for f in {' '.join(names)}; do echo $f > $f; done")

        def teardown(self):
            self.host.conn.run(f"rm -rf {DIR}")


    class Controller(TopologyController):
        def set_artifacts(self, client):
            self.artifacts.test[client] = {f"{DIR}/controller.txt"}


    class Domain(MultihostDomain):
        @property
        def role_to_host_class(self):
            return {"*": ClientHost}

        @property
        def role_to_role_class(self):
            return {"*": Client}


    class Config(MultihostConfig):
        @property
        def id_to_domain_class(self):
            return {"*": Domain}


    def pytest_plugin_registered(plugin):
        if isinstance(plugin, MultihostPlugin):
            plugin.config_class = Config
""")

TESTS = textwrap.dedent("""\
    import socket

    import pytest
    from conftest import Controller
    from pytest_mh import Topology, TopologyDomain, TopologyMark

    CLIENT = TopologyMark("client", Topology(TopologyDomain("default", client=1)), controller=Controller(),
                          fixtures=dict(client="default.client[0]"))


    @pytest.mark.topology(CLIENT)
    def test_files_and_address(client):
        assert client.host.hostname == "client1"
        assert client.host.conn.host == "{address}"
        socket.create_connection((client.host.conn.host, 22), timeout=10).close()
        assert client.host.conn.run("ls /tmp/mh-compat-artifacts | wc -l").stdout == "6"
""")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    # mh_role as convert-mhc writes it: the lab's own group (lab_<name>) is not the host's pytest-mh role
    spec = LabSpec(name=LAB_NAME, hosts=(LabHostSpec("client1", roles=("client",), vars={"mh_role": "client"}),))
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab


def _address(lab: Lab) -> str:
    [host] = [host for host in lab.hosts if host.name == "client1"]
    return host.address


def test_compat_artifacts_lab__listed_files_are_fetched_and_conn_host_is_the_address(
    pytester: pytest.Pytester, lab: Lab
) -> None:
    address = _address(lab)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_art=TESTS.replace("{address}", address))
    result = pytester.runpytest_subprocess(
        "-p",
        "pytest_mh_ansible.compat.plugin",
        f"--mh-inventory={lab.inventory_path}",
        "-p",
        "no:cacheprovider",
        "--mh-collect-artifacts",
        "always",
        "--mh-artifacts-dir",
        "art",
    )
    result.assert_outcomes(passed=1)
    fetched = pytester.path / "art/tests/test_art/test_files_and_address[client]/client/client1/tmp/mh-compat-artifacts"
    assert sorted(path.name for path in fetched.iterdir()) == [
        "controller.txt",
        "host-a.log",
        "host-b.log",
        "role.txt",
        "utility-test.txt",
    ]
    assert (fetched / "role.txt").read_text() == "role.txt\n"
