"""pytest-mh's ``mh`` object, configuration, hosts and artifacts in the layer, without hosts or a session."""

from __future__ import annotations

import logging
from pathlib import Path, PurePosixPath
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_mh_ansible import Topology as ProjectTopology
from pytest_mh_ansible import TopologyDomain as ProjectTopologyDomain
from pytest_mh_ansible._private.reporting.artifacts import artifact_patterns
from pytest_mh_ansible.compat import (
    MultihostBackupHost,
    MultihostConfig,
    MultihostDomain,
    MultihostFixture,
    MultihostHost,
    MultihostHostArtifacts,
    MultihostItemData,
    MultihostLogger,
    MultihostOSFamily,
    MultihostRole,
    MultihostTopologyControllerArtifacts,
    TopologyMark,
)
from pytest_mh_ansible.compat.artifacts import MultihostArtifactsCollector, should_collect_artifacts
from pytest_mh_ansible.compat.config import confdict_from_inventory
from pytest_mh_ansible.compat.conn import Powershell
from pytest_mh_ansible.compat.itemdata import MULTIHOST_KEY


class _Config(MultihostConfig):
    @property
    def id_to_domain_class(self) -> dict[str, type[MultihostDomain[Any]]]:
        return {"*": _Domain}


class _Domain(MultihostDomain[_Config]):
    pass


def _confdict(*hosts: dict[str, Any], domain_id: str = "test") -> dict[str, Any]:
    return {"config": {"top": 1}, "domains": [{"id": domain_id, "hosts": list(hosts)}]}


def _config(confdict: dict[str, Any], **options: Any) -> _Config:
    return _Config(confdict, logger=MultihostLogger.GetLogger(suffix="unit"), **options)


# -- MultihostConfig, MultihostDomain, MultihostHost ---------------------------------------------------
def test_compat_config__keeps_the_run_options_and_makes_domains_and_hosts() -> None:
    confdict = _confdict({"hostname": "c1", "role": "client"}, {"hostname": "s1", "role": "server"})
    config = _config(
        confdict, lazy_ssh=True, artifacts_dir=Path("art"), artifacts_mode="always", artifacts_compression=True
    )
    assert (config.confdict, config.config, config.lazy_ssh) == (confdict, {"top": 1}, True)
    assert (config.artifacts_dir, config.artifacts_mode, config.artifacts_compression) == (Path("art"), "always", True)
    assert (config._in_test, config._sigint, config.required_fields) == (False, False, ["domains"])
    assert config.TopologyMarkClass is TopologyMark
    [domain] = config.domains
    assert (domain.id, domain.roles, domain.mh_config, domain.logger) == (
        "test",
        ["client", "server"],
        config,
        config.logger,
    )
    assert [host.hostname for host in domain.hosts] == ["c1", "s1"]
    assert domain.hosts_by_role("server") == [domain.hosts[1]]
    assert domain.hosts_by_role("nope") == []


@pytest.mark.parametrize(
    ("confdict", "field"),
    [
        ({"config": {}}, '"domains" property is missing in configuration'),
        ({"domains": [{"hosts": []}]}, "a domain has no 'id'"),
        ({"domains": [{"id": "x"}]}, '"hosts" property is missing in domain configuration'),
        ({"domains": [{"id": "x", "hosts": [{"hostname": "h"}]}]}, '"role" property is missing'),
        ({"domains": [{"id": "x", "hosts": [{"role": "r"}]}]}, '"hostname" property is missing in host configuration'),
    ],
)
def test_compat_config__missing_required_fields_are_value_errors(confdict: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        _config(confdict)


def test_compat_config__subclasses_extend_required_fields_with_nested_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_Config, "required_fields", property(lambda self: ["domains", "config/custom"]))
    with pytest.raises(ValueError, match='"config/custom" property is missing'):
        _config(_confdict({"hostname": "c1", "role": "client"}))
    monkeypatch.setattr(MultihostHost, "required_fields", property(lambda self: ["role", "hostname", "os.family"]))
    with pytest.raises(ValueError, match=r'"os\.family" property is missing in host configuration'):
        _config({**_confdict({"hostname": "c1", "role": "client"}), "config": {"custom": 1}})


def test_compat_config__topology_hosts_takes_as_many_hosts_per_role_as_the_topology_needs() -> None:
    config = _config(
        _confdict(
            {"hostname": "c1", "role": "client"}, {"hostname": "c2", "role": "client"}, {"hostname": "s1", "role": "s"}
        )
    )
    topology = ProjectTopology(ProjectTopologyDomain("test", client=1))
    assert [host.hostname for host in config.topology_hosts(topology)] == ["c1"]
    other = ProjectTopology(ProjectTopologyDomain("other", client=1))
    assert config.topology_hosts(other) == []


def test_compat_host__members_from_the_inventory_and_confdict() -> None:
    variables = {"mh_role": "client", "ansible_host": "192.0.2.7", "mh_artifacts": {"test": ["/var/log/a"]}}
    config = _config(confdict_from_inventory([("client1", ("client",), "test", variables)]))
    [host] = config.domains[0].hosts
    assert (host.hostname, host.role, host.os_family, host.address) == (
        "client1",
        "client",
        MultihostOSFamily.Linux,
        "192.0.2.7",
    )
    assert isinstance(host.artifacts, MultihostHostArtifacts)
    assert host.configured_artifacts.test == {"/var/log/a"}
    host.artifacts.test.add("/var/log/b")
    host.artifacts.pytest_setup.add("/etc/x")
    assert host.get_artifacts_list(host, "test") == {"/var/log/a", "/var/log/b"}
    assert host.get_artifacts_list(host, "pytest_setup") == {"/etc/x"}
    assert isinstance(host.logger, MultihostLogger)
    assert host.logger.extra == {"host": "client1"}
    assert host.conn.host == "192.0.2.7"  # the address, as pytest-mh's conn.host; nothing connects yet
    assert host.get_connection() is not host.conn
    assert isinstance(host.artifacts_collector, MultihostArtifactsCollector)


def test_compat_host__an_inventory_written_for_this_project_names_its_phases_its_way() -> None:
    artifacts = {"session_setup": ["/s"], "topology_setup": ["/t"], "test": ["/x"]}
    variables = {"mh_role": "client", "mh_artifacts": artifacts}
    [host] = _config(confdict_from_inventory([("c1", ("client",), "test", variables)])).domains[0].hosts
    assert host.get_artifacts_list(host, "pytest_setup") == {"/s"}
    assert host.get_artifacts_list(host, "topology_setup") == {"/t"}
    assert host.get_artifacts_list(host, "test") == {"/x"}


def test_compat_host__windows_hosts_use_powershell_and_unknown_families_are_refused() -> None:
    config = _config(_confdict({"hostname": "w1", "role": "ad", "os": {"family": "Windows"}}))
    host = config.domains[0].hosts[0]
    assert host.os_family is MultihostOSFamily.Windows
    assert isinstance(host.shell, Powershell)
    with pytest.raises(ValueError, match="'beos' is not supported"):
        _config(_confdict({"hostname": "b1", "role": "x", "os": {"family": "beos"}}))


def test_compat_host__a_conn_section_gives_pytest_mh_clients() -> None:
    from pytest_mh_ansible.compat.conn.container import ContainerClient
    from pytest_mh_ansible.compat.conn.ssh import SSHClient

    config = _config(
        _confdict(
            {"hostname": "s1", "role": "a", "conn": {"type": "ssh", "host": "192.0.2.9", "password": "x"}},
            {"hostname": "p1", "role": "b", "conn": {"type": "podman", "container": "c1"}},
        )
    )
    ssh, podman = config.domains[0].hosts
    assert isinstance(ssh.conn, SSHClient)
    assert ssh.conn.host == "192.0.2.9"
    assert isinstance(podman.conn, ContainerClient)
    assert podman.conn.engine == "podman"
    with pytest.raises(ValueError, match="unknown connection type 'telnet'"):
        _ = _config(_confdict({"hostname": "t1", "role": "a", "conn": {"type": "telnet"}})).domains[0].hosts[0].conn


class _Backup(MultihostBackupHost[Any]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, auto_restore=False, **kwargs)
        self.calls: list[Any] = []

    def start(self) -> None:
        self.calls.append("start")

    def backup(self) -> Any:
        self.calls.append("backup")
        return [PurePosixPath("/tmp/b1"), PurePosixPath("/tmp/b2")]

    def restore(self, backup_data: Any) -> None:
        self.calls.append(("restore", backup_data))


def test_compat_backup_host__starts_backs_up_and_restores_as_told(monkeypatch: pytest.MonkeyPatch) -> None:
    class Domain(MultihostDomain[Any]):
        @property
        def role_to_host_class(self) -> dict[str, type[MultihostHost[Any]]]:
            return {"*": _Backup}

    class Config(_Config):
        @property
        def id_to_domain_class(self) -> dict[str, type[MultihostDomain[Any]]]:
            return {"*": Domain}

    host = Config(_confdict({"hostname": "b1", "role": "ldap"})).domains[0].hosts[0]
    assert isinstance(host, _Backup)
    removed: list[list[str]] = []
    monkeypatch.setattr(type(host), "conn", property(lambda self: SimpleNamespace(exec=removed.append)))
    host.pytest_setup()
    host.teardown()  # auto_restore=False: a controller restores
    assert host.calls == ["start", "backup"]
    assert host.backup_data == [PurePosixPath("/tmp/b1"), PurePosixPath("/tmp/b2")]
    host.restore(host.backup_data)
    host.pytest_teardown()
    assert removed == [["rm", "-fr", "--", "/tmp/b1", "/tmp/b2"]]
    host.remove_backup({"not": "paths"})  # other data is left alone
    assert len(removed) == 1


# -- artifacts ------------------------------------------------------------------------------------
def test_compat_artifacts__host_sets_from_a_list_or_per_phase() -> None:
    assert MultihostHostArtifacts(["/a"]).test == {"/a"}
    per_phase = MultihostHostArtifacts({"pytest_setup": ["/s"], "test": ["/t"]})
    assert (per_phase.get("pytest_setup"), per_phase.get("test"), per_phase.get("topology_setup")) == (
        {"/s"},
        {"/t"},
        set(),
    )
    with pytest.raises(ValueError, match="unknown phase 'topology_setup'"):
        MultihostHostArtifacts({"topology_setup": ["/x"]})
    with pytest.raises(TypeError):
        MultihostHostArtifacts("/a")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown artifacts type"):
        per_phase.get("later")  # type: ignore[arg-type]


def test_compat_artifacts__controller_sets_are_per_host() -> None:
    artifacts = MultihostTopologyControllerArtifacts()
    host, other = object(), object()
    artifacts.topology_setup[host] = {"/x"}  # type: ignore[index]
    assert artifacts.get(host, "topology_setup") == {"/x"}  # type: ignore[arg-type]
    assert artifacts.get(other, "topology_setup") == set()  # type: ignore[arg-type]
    assert artifacts.get(host, "pytest_setup") == set()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mode", "outcome", "expected"),
    [
        ("never", "failed", False),
        ("always", "passed", True),
        ("on-failure", "unknown", True),
        ("on-failure", "skipped", False),
    ],
)
def test_compat_artifacts__should_collect(mode: str, outcome: str, expected: bool) -> None:
    assert should_collect_artifacts(mode, outcome) is expected


def test_compat_artifacts__collector_fetches_what_the_objects_list(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fetched: list[tuple[Any, ...]] = []
    monkeypatch.setattr(
        "pytest_mh_ansible.compat.artifacts.fetch_artifacts",
        lambda host, patterns, destination, *, compress: fetched.append((host, patterns, destination, compress)),
    )
    host = SimpleNamespace(hostname="h1", logger=logging.getLogger("unit"))
    lister = SimpleNamespace(get_artifacts_list=lambda h, t: {f"/{t}/b", f"/{t}/a"})
    collector = MultihostArtifactsCollector(host=host, path=tmp_path, mode="on-failure", compress=True)  # type: ignore[arg-type]
    collector.collect("test", path="tests/x[y]", outcome="passed", collect_objects=[lister])
    assert fetched == []
    collector.collect("test", path="tests/x", outcome="failed", collect_objects=[lister])
    assert fetched == [(host, ["/test/a", "/test/b"], tmp_path / "tests/x", True)]
    broken = SimpleNamespace(get_artifacts_list=lambda h, t: 1 / 0)
    with pytest.raises(ExceptionGroup):
        collector.collect("test", path="tests/x", outcome="failed", collect_objects=[broken])


def test_compat_artifacts__the_plugins_collector_asks_get_artifacts_list_with_pytest_mh_phase_names(
    caplog: pytest.LogCaptureFixture,
) -> None:
    asked: list[tuple[object, str]] = []

    class Source:
        host = "the-host"

        def get_artifacts_list(self, host: object, artifacts_type: str) -> set[str]:
            asked.append((host, artifacts_type))
            return {"/b", "/a"}

    assert artifact_patterns(Source(), "session_setup") == ["/a", "/b"]
    assert artifact_patterns(Source(), "topology_teardown", host="h2") == ["/a", "/b"]
    assert asked == [("the-host", "pytest_setup"), ("h2", "topology_teardown")]

    class Broken:
        def get_artifacts_list(self, host: object, artifacts_type: str) -> set[str]:
            raise RuntimeError("no list")

    with caplog.at_level(logging.WARNING):
        assert artifact_patterns(Broken(), "test") == []
    assert "no list" in caplog.text
    assert artifact_patterns(SimpleNamespace(artifacts={"test": ["/p"]}), "test") == ["/p"]  # the project's form


# -- MultihostFixture -------------------------------------------------------------------------------
def test_compat_fixture__pytest_mh_members(tmp_path: Path) -> None:
    config = _config(
        _confdict({"hostname": "c1", "role": "client"}, {"hostname": "c2", "role": "client"}),
        artifacts_dir=tmp_path,
        artifacts_mode="always",
    )
    config.logger.setup(log_path=None, artifacts_mode="always", artifacts_dir=tmp_path)
    config.logger.setLevel(logging.DEBUG)
    mark = TopologyMark(
        "two", ProjectTopology(ProjectTopologyDomain("test", client=2)), fixtures={"first": "test.client[0]"}
    )
    hosts = config.domains[0].hosts
    active = SimpleNamespace(mark=mark, hosts_by_slot={("test", "client"): hosts}, controller_hosts={})
    stash = pytest.Stash()
    stash[MULTIHOST_KEY] = config
    node = SimpleNamespace(
        nodeid="tests/test_a.py::test_a[two]", stash=pytest.Stash(), config=SimpleNamespace(stash=stash)
    )
    request = SimpleNamespace(node=node, config=node.config)
    mh = MultihostFixture(active, MultihostRole, None, request)  # type: ignore[arg-type]
    assert mh.request is request
    assert mh.multihost is config
    assert mh.logger is config.logger
    assert isinstance(mh.data, MultihostItemData)
    assert mh.data is MultihostItemData.GetData(node)  # type: ignore[arg-type]
    assert mh.topology_controller is mark.controller
    first, second = mh.roles
    assert mh._lookup("test.client") == [first, second]
    assert mh._lookup("test.client[1]") is second
    with pytest.raises(LookupError, match=r"'test\.server'"):
        mh._lookup("test.server")
    assert mh.fixtures == {"first": first}
    assert mh._skip() is False
    mh.log_phase("SETUP")
    mh.split_log_file("setup.log")
    config.logger.flush("passed")
    written = (tmp_path / "tests/tests/test_a/test_a[two]/setup.log").read_text()
    assert "SETUP :: tests/test_a.py::test_a[two]" in written


# -- ProcessLogLevel.Silent -----------------------------------------------------------------------------
class _Shell:
    """Runs commands on this machine, as a connection plugin would on a host."""

    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass

    def exec(self, command: str, **options: Any) -> tuple[int, bytes, bytes]:
        import subprocess

        proc = subprocess.run(["/bin/sh", "-c", command], input=options.get("input"), capture_output=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr


def test_compat_conn__silent_commands_leave_nothing_in_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    from pytest_mh_ansible import Connection as ProjectConnection
    from pytest_mh_ansible.compat.conn import Bash, HostConnection, ProcessLogLevel

    conn = HostConnection(ProjectConnection("local", {}, transport=_Shell()), Bash(), host="local")
    with caplog.at_level(1):
        assert conn.run("echo s3cr3t-out", log_level=ProcessLogLevel.Silent).stdout == "s3cr3t-out"
        assert conn.run("echo s3cr3t-cmd >&2; exit 3", log_level=ProcessLogLevel.Silent, raise_on_error=False).rc == 3
    assert "s3cr3t" not in caplog.text
    with caplog.at_level(1):
        conn.run("echo l0ud")
    assert "l0ud" in caplog.text
