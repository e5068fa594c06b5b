"""pytest-mh's topology controllers through the layer, on lab hosts.

A small pytest-mh-style suite (``pytest_mh`` imports only) runs with ``-p pytest_mh_ansible.compat.plugin``
on a client and a server whose state is a file, ``/root/mhcc-state``. Its ``BackupTopologyController``
reads ``provisioned_topologies`` of the host file (``mh_multihost_keys``, as ``convert-mhc`` writes it) in
``init``, writes the file in ``topology_setup`` with the server it names, and backs the server up; tests
change the file and the next test finds it as ``topology_setup`` left it; ``require`` reads the server's
file against a parametrized value; a second controller fails in ``topology_setup`` and its
``restore_vanilla_on_error`` puts the server back. Afterwards the server has no state file.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator

import pytest
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

pytestmark = pytest.mark.integration

LAB_NAME = lab_name("mhcc")

EXTRA_INVENTORY = textwrap.dedent("""\
    all:
      vars:
        mh_multihost_keys:
          provisioned_topologies: [pair]
      hosts:
        client1: {mh_role: client}
        server1: {mh_role: server}
""")

CONFTEST = textwrap.dedent("""\
    from pathlib import PurePath

    from pytest_mh import (MultihostBackupHost, MultihostConfig, MultihostDomain, MultihostHost, MultihostPlugin,
                           MultihostRole)

    pytest_plugins = ("pytest_mh",)
    STATE = "/root/mhcc-state"


    class ServerHost(MultihostBackupHost):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, auto_restore=False, **kwargs)

        def start(self):
            pass

        def stop(self):
            pass

        def backup(self):
            path = self.conn.run(f"d=$(mktemp -d); [ ! -e {STATE} ] || cp -a {STATE} $d/; echo $d").stdout.strip()
            return PurePath(path)

        def restore(self, backup_data):
            self.conn.run(f"rm -f {STATE}; [ ! -e {backup_data}/mhcc-state ] || cp -a {backup_data}/mhcc-state {STATE}")


    class Domain(MultihostDomain):
        @property
        def role_to_host_class(self):
            return {"server": ServerHost, "*": MultihostHost}

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
    from pytest_mh import BackupTopologyController, Topology, TopologyDomain, TopologyMark

    STATE = "/root/mhcc-state"


    def state(role):
        return role.host.conn.run(f"cat {STATE} 2>/dev/null || echo none").stdout.strip()


    class PairController(BackupTopologyController):
        def init(self, *args, **kwargs):
            super().init(*args, **kwargs)
            self.provisioned = self.name in self.multihost.provisioned_topologies
            self.inits = getattr(self, "inits", 0) + 1

        def topology_setup(self, server):
            server.conn.run(f"echo topology > {STATE}")
            super().topology_setup(server=server)

        def setup(self, client):
            self.clients = getattr(self, "clients", []) + [client.hostname]


    class BrokenController(BackupTopologyController):
        @BackupTopologyController.restore_vanilla_on_error
        def topology_setup(self, server):
            server.conn.run(f"echo broken > {STATE}")
            raise RuntimeError("enrollment failed")


    PAIR = TopologyMark("pair", Topology(TopologyDomain("default", client=1, server=1)), controller=PairController(),
                        fixtures=dict(client="default.client[0]", server="default.server[0]"))
    BROKEN = TopologyMark("broken", Topology(TopologyDomain("default", server=1)), controller=BrokenController(),
                          fixtures=dict(server="default.server[0]"))


    @pytest.mark.topology(PAIR)
    def test_1__changes_the_state(client, server, mh):
        controller = mh.topology_controller
        assert (controller.provisioned, controller.inits, controller.clients) == (True, 1, ["client1"])
        assert [h.hostname for h in controller.hosts] == ["client1", "server1"]
        assert state(server) == "topology"
        server.host.conn.run(f"echo changed > {STATE}")


    @pytest.mark.topology(PAIR)
    def test_2__finds_the_topology_state(server, mh):
        assert mh.topology_controller.inits == 1
        assert state(server) == "topology"


    @pytest.mark.parametrize("want", ["topology", "other"])
    @pytest.mark.require(lambda server, want: (state(server) == want, f"the state is not {want}"))
    @pytest.mark.topology(PAIR)
    def test_3__require_reads_the_host(server, want):
        assert want == "topology"


    @pytest.mark.topology(BROKEN)
    def test_4__broken(server):
        pass


    @pytest.mark.topology(BROKEN)
    def test_5__vanilla_again(server):
        pass
""")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """client1 and server1 (sysv)."""
    spec = LabSpec(
        name=LAB_NAME,
        hosts=(LabHostSpec("client1", roles=("client",)), LabHostSpec("server1", roles=("server",))),
    )
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab


def test_compat_controllers__backup_controller_init_and_require_on_lab_hosts(
    pytester: pytest.Pytester, lab: Lab
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_ctrl=TESTS)
    pytester.makefile(".yml", extra=EXTRA_INVENTORY)
    result = pytester.runpytest_subprocess(
        "-p",
        "pytest_mh_ansible.compat.plugin",
        f"--mh-inventory={lab.inventory_path}",
        "--mh-inventory=extra.yml",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-v",
        "-rA",
    )
    text = result.stdout.str()
    outcomes = dict(re.findall(r"^test_ctrl\.py::(\S+) (PASSED|FAILED|ERROR|SKIPPED)", text, re.MULTILINE))
    assert outcomes == {
        "test_1__changes_the_state[pair]": "PASSED",
        "test_2__finds_the_topology_state[pair]": "PASSED",
        "test_3__require_reads_the_host[pair-topology]": "PASSED",
        "test_3__require_reads_the_host[pair-other]": "SKIPPED",
        "test_4__broken[broken]": "ERROR",
        "test_5__vanilla_again[broken]": "ERROR",
    }, text
    assert "the state is not other" in text
    assert "enrollment failed" in text
    # restore_vanilla_on_error put the server back as the session found it: no state file
    assert lab.run_inside("server1", "cat /root/mhcc-state 2>/dev/null || echo none").stdout.strip() == "none"
