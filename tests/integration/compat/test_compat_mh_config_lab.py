"""A pytest-mh suite on lab hosts with pytest-mh's command line as it is: ``--mh-config=mhc.yaml``, no ``-p``.

The suite lists ``pytest_mh`` in ``pytest_plugins`` (no real pytest-mh is installed here) and has
``filterwarnings = error``; its host file gives each host's connection, ``artifacts`` by pytest-mh's
phases and a top-level ``provisioned_topologies``. The run must reach both hosts through the file
alone, fetch the ``pytest_setup`` and ``pytest_teardown`` artifacts in those phases, and give the
suite's ``MultihostConfig`` the file's extra keys.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

pytestmark = pytest.mark.integration

LAB_NAME = lab_name("mhcfg")

CONFTEST = textwrap.dedent("""\
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
        def provisioned_topologies(self):
            return self.confdict.get("provisioned_topologies", [])

        @property
        def id_to_domain_class(self):
            return {"*": Domain}

    def pytest_plugin_registered(plugin):
        if isinstance(plugin, MultihostPlugin):
            plugin.config_class = Config
""")

TESTS = textwrap.dedent("""\
    import pytest
    from pytest_mh import Topology, TopologyDomain, TopologyMark

    PAIR = TopologyMark("pair", Topology(TopologyDomain("test", client=1, server=1)),
                        fixtures=dict(client="test.client[0]", server="test.server[0]"))
    CLIENT = TopologyMark("client", Topology(TopologyDomain("test", client=1)), fixtures=dict(client="test.client[0]"))

    @pytest.mark.topology([CLIENT, PAIR])
    @pytest.mark.preferred_topology("pair")
    def test_both_hosts(client, server, mh_config):
        assert client.host.conn.run("hostname").stdout.strip() == "client1"
        assert server.host.conn.run("hostname").stdout.strip() == "server1"
        assert mh_config.provisioned_topologies == ["pair"]
""")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    spec = LabSpec(name=LAB_NAME, hosts=(LabHostSpec("client1", roles=("client",)), LabHostSpec("server1")))
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab


def _mhc(lab: Lab) -> str:
    address = {host.name: host.address for host in lab.hosts}
    conn = {"type": "ssh", "username": "root", "private_key": str(lab.key_path)}
    return yaml.safe_dump(
        {
            "provisioned_topologies": ["pair"],
            "domains": [
                {
                    "id": "test",
                    "hosts": [
                        {
                            "hostname": "client1",
                            "role": "client",
                            "conn": {**conn, "host": address["client1"]},
                            "artifacts": {"pytest_setup": ["/etc/hostname"], "pytest_teardown": ["/etc/os-release"]},
                        },
                        {"hostname": "server1", "role": "server", "conn": {**conn, "host": address["server1"]}},
                    ],
                }
            ],
        },
        sort_keys=False,
    )


def test_compat_mh_config__pytest_mh_command_line_on_lab_hosts(pytester: pytest.Pytester, lab: Lab) -> None:
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider --strict-markers\nfilterwarnings =\n    error\n")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_suite=TESTS)
    (pytester.path / "mhc.yaml").write_text(_mhc(lab))
    result = pytester.runpytest_subprocess(
        "--mh-config=mhc.yaml", "--mh-lazy-ssh", "--mh-collect-artifacts=always", "--mh-collect-logs=never", "-rA"
    )
    result.assert_outcomes(passed=1, deselected=1)  # preferred_topology: the pair only
    session = Path(pytester.path / "artifacts" / "session" / "client1")
    assert (session / "etc" / "hostname").read_text().strip() == "client1"  # pytest_setup's
    assert (session / "etc" / "os-release").is_file()  # pytest_teardown's
    assert not (pytester.path / "artifacts" / "session" / "server1").exists()  # no artifacts listed for it
    assert list((pytester.path / "artifacts").rglob("test.log")) == []  # --mh-collect-logs=never
