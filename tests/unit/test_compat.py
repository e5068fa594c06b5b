"""The pytest-mh compatibility layer, without hosts: import name, connection API, CLIBuilder, utilities, config."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import pytest_mh_ansible
from pytest_mh_ansible import Connection as AnsibleConnection
from pytest_mh_ansible.compat import (
    MultihostConfig,
    MultihostDomain,
    MultihostHost,
    MultihostRole,
    MultihostUtility,
    _alias,
    mh_utility,
    mh_utility_ignore_use,
    mh_utility_postpone_setup,
)
from pytest_mh_ansible.compat.cli import CLIBuilder
from pytest_mh_ansible.compat.config import confdict_from_inventory
from pytest_mh_ansible.compat.conn import (
    Bash,
    Connection,
    HostConnection,
    Powershell,
    ProcessError,
    ProcessTimeoutError,
)


class _LocalTransport:
    """Runs commands on this machine with /bin/sh, as a connection plugin would on a host."""

    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass

    def exec(self, command: str, *, input: bytes | None = None, become: Any = None, become_user: Any = None,
             timeout: float | None = None) -> tuple[int, bytes, bytes]:  # fmt: skip
        try:
            proc = subprocess.run(["/bin/sh", "-c", command], input=input, capture_output=True, timeout=timeout,
                                  check=False)  # fmt: skip
        except subprocess.TimeoutExpired as err:
            raise pytest_mh_ansible.ProcessTimeoutError("local", command, timeout or 0) from err
        return proc.returncode, proc.stdout, proc.stderr

    def put(self, local: Any, remote: str) -> None:
        raise NotImplementedError

    def get(self, remote: str, local: Any) -> None:
        raise NotImplementedError


@pytest.fixture
def conn() -> HostConnection:
    return HostConnection(AnsibleConnection("local", {}, transport=_LocalTransport()), Bash(), host="local")


def test_compat__pytest_mh_import_name_is_this_layer() -> None:
    _alias.install()
    import pytest_mh
    import pytest_mh.conn
    import pytest_mh.utils.fs

    assert pytest_mh.MultihostHost is MultihostHost
    assert pytest_mh.conn.Connection is Connection
    assert pytest_mh.utils.fs.LinuxFileSystem.__module__ == "pytest_mh_ansible.compat.utils.fs"
    assert _alias.installed()


def test_compat__run_uses_bash_dedents_and_joins_lines(conn: Connection) -> None:
    result = conn.run(
        """
        [[ "$GREETING" == hi ]] && echo "$GREETING from $(pwd)"
        echo second
        """,
        env={"GREETING": "hi"},
        cwd="/tmp",
    )
    assert result.rc == 0
    assert result.stdout == "hi from /tmp\nsecond"
    assert result.stdout_lines == ["hi from /tmp", "second"]


def test_compat__process_error_has_pytest_mh_attributes_and_is_ours_too(conn: Connection) -> None:
    with pytest.raises(ProcessError) as info:
        conn.run("echo out; echo err >&2; exit 3", cwd="/tmp", env={"A": "1"})
    err = info.value
    assert isinstance(err, pytest_mh_ansible.ProcessError)
    assert (err.rc, err.stdout, err.stderr, err.cwd, err.env) == (3, "out", "err", "/tmp", {"A": "1"})
    assert err.stdout_lines == ["out"]
    assert err.id > 0
    assert f"Command #{err.id} exited with return code 3" in str(err)
    result = conn.run("exit 4", raise_on_error=False)
    assert result.rc == 4
    with pytest.raises(ProcessError):
        result.throw()


def test_compat__exec_quotes_every_argument(conn: Connection) -> None:
    result = conn.exec(["printf", "%s|", "a b", "$HOME", "it's"])
    assert result.stdout == "a b|$HOME|it's|"
    with pytest.raises(ValueError, match="did you mean exec"):
        conn.run(["echo"])  # type: ignore[arg-type]


def test_compat__timeout_raises_process_timeout_error(conn: Connection) -> None:
    with pytest.raises(ProcessTimeoutError) as info:
        conn.run("sleep 5", timeout=0.5)
    assert info.value.timeout == 0.5
    assert isinstance(info.value, pytest_mh_ansible.ProcessTimeoutError)


def test_compat__cli_builder_builds_command_argv_and_args() -> None:
    cli = CLIBuilder(Bash())
    args: dict[str, Any] = {
        "name": (CLIBuilder.option.VALUE, "it's me"),
        "uid": (CLIBuilder.option.PLAIN, 1000),
        "force": (CLIBuilder.option.SWITCH, True),
        "quiet": (CLIBuilder.option.SWITCH, False),
        "group": (CLIBuilder.option.VALUE, ["a", "b"]),
        "-s": (CLIBuilder.option.PLAIN, "/bin/sh"),
        "skip": None,
        "none": (CLIBuilder.option.VALUE, None),
        "user": (CLIBuilder.option.POSITIONAL, "user1"),
    }
    assert cli.command("useradd", args) == (
        "useradd --name 'it'\"'\"'s me' --uid 1000 --force --group 'a' --group 'b' -s /bin/sh 'user1'"
    )
    assert cli.argv("useradd", args) == [
        "useradd", "--name", "it's me", "--uid", "1000", "--force", "--group", "a", "--group", "b", "-s", "/bin/sh",
        "user1",
    ]  # fmt: skip
    assert cli.args({"x": (CLIBuilder.option.SWITCH, True)}) == ["--x"]


class _Host:
    name = hostname = "h1"


class _Counter(MultihostUtility[Any]):
    def __init__(self, host: Any) -> None:
        super().__init__(host)
        self.calls: list[str] = []

    def setup(self) -> None:
        self.calls.append("setup")

    def use(self) -> int:
        self.calls.append("use")
        return 1

    @mh_utility_ignore_use
    def peek(self) -> int:
        self.calls.append("peek")
        return 0

    @property
    def value(self) -> int:
        self.calls.append("value")
        return 2

    def teardown(self) -> None:
        self.calls.append("teardown")


def test_compat__utility_setup_runs_eagerly_by_default() -> None:
    util = _Counter(_Host())
    util.setup()
    util.use()
    util.teardown()
    util.teardown()
    assert util.calls == ["setup", "use", "teardown"]


def test_compat__postponed_setup_runs_on_first_use_and_unused_is_never_set_up() -> None:
    used = _Counter(_Host()).postpone_setup()
    used.setup()
    assert used.calls == []
    used.peek()
    assert used.value == 2
    used.use()
    used.teardown()
    assert used.calls == ["peek", "setup", "value", "use", "teardown"]
    unused = _Counter(_Host()).postpone_setup()
    unused.setup()
    unused.teardown()
    assert unused.calls == []


def test_compat__postpone_decorator_and_subclass_super_calls() -> None:
    @mh_utility_postpone_setup
    class Child(_Counter):
        def setup(self) -> None:
            super().setup()
            self.calls.append("child setup")

    util = Child(_Host())
    util.setup()
    util.use()
    util.teardown()
    assert util.calls == ["setup", "child setup", "use", "teardown"]


def test_compat__teardown_is_skipped_when_setup_failed() -> None:
    class Broken(_Counter):
        def setup(self) -> None:
            raise RuntimeError("no")

    util = Broken(_Host())
    with pytest.raises(RuntimeError):
        util.setup()
    util.teardown()
    assert util.calls == []


def test_compat__mh_utility_sets_up_and_tears_down_around_a_block() -> None:
    util = _Counter(_Host()).postpone_setup()
    with mh_utility(util) as same:
        assert same is util
    assert util.calls == ["setup", "teardown"]


def test_compat__confdict_from_inventory_maps_variables_and_roles() -> None:
    confdict = confdict_from_inventory(
        [
            ("client1", ("test", "client"), "test", {"mh_role": "client", "mh_config": {"a": 1},
                                                   "mh_domain_config": {"d": 2}, "mh_multihost_config": {"t": 3}}),
            ("server1", ("test", "server"), "test", {"mh_artifacts": ["/var/log/x"]}),
            ("ldap1", ("ldap",), "other", {}),
        ]
    )  # fmt: skip
    assert confdict["config"] == {"t": 3}
    test, other = confdict["domains"]
    assert (test["id"], test["config"], other["id"]) == ("test", {"d": 2}, "other")
    assert [(h["hostname"], h["role"]) for h in test["hosts"]] == [("client1", "client"), ("server1", "server")]
    assert test["hosts"][0]["config"] == {"a": 1}
    assert test["hosts"][1]["artifacts"] == ["/var/log/x"]
    assert other["hosts"][0]["role"] == "ldap"


class _ClientHost(MultihostHost["_Domain"]):
    pass


class _Client(MultihostRole[_ClientHost]):
    pass


class _Domain(MultihostDomain["_Config"]):
    @property
    def role_to_host_class(self) -> dict[str, type[MultihostHost[Any]]]:
        return {"client": _ClientHost}

    @property
    def role_to_role_class(self) -> dict[str, type[MultihostRole[Any]]]:
        return {"client": _Client}


class _Config(MultihostConfig):
    @property
    def id_to_domain_class(self) -> dict[str, type[MultihostDomain[Any]]]:
        return {"test": _Domain}


def test_compat__config_and_domain_classes_make_hosts_and_roles() -> None:
    variables = {"mh_role": "client", "mh_config": {"x": 1}, "ansible_host": "192.0.2.1"}
    config = _Config(confdict_from_inventory([("client1", ("client",), "test", variables)]))
    domain = config.domain("test")
    [host] = domain.hosts  # made with the domain, as in pytest-mh
    assert type(host) is _ClientHost
    assert type(domain.create_host(domain.host_confdict("client1"))) is _ClientHost
    assert (host.hostname, host.role, host.config, host.mh_domain, host.address) == (
        "client1", "client", {"x": 1}, domain, "192.0.2.1",
    )  # fmt: skip
    assert domain.hosts_by_role("client") == [host]
    assert type(domain.create_role(None, host)) is _Client  # type: ignore[arg-type]
    assert host.shell.name == "bash"
    assert host.cli.command("id", {"user": (host.cli.option.POSITIONAL, "root")}) == "id 'root'"
    with pytest.raises(pytest_mh_ansible.MultihostError, match="no domain 'nope'"):
        config.domain("nope")


def test_compat__async_run_on_a_transport_without_live_processes_is_a_clear_error(conn: HostConnection) -> None:
    with pytest.raises(pytest_mh_ansible.MultihostError, match="cannot run live processes"):
        conn.async_run("true")
    assert issubclass(HostConnection, Connection)


def test_compat__real_pytest_mh_is_not_installed_here() -> None:
    # The alias hides a real pytest-mh; the unit tests' venv has none, so nothing is hidden.
    assert not _alias.real_pytest_mh_installed()
    assert os.environ.get("PYTEST_MH_REAL") is None


class _FsHost:
    """What LinuxFileSystem needs of a host: a name, a connection and the journal."""

    def __init__(self, conn: Connection) -> None:
        self.name = self.hostname = "local"
        self.conn = conn
        self.journal = pytest_mh_ansible.RollbackJournal()


def test_compat__linux_fs_changes_are_one_command_each_and_undone_with_the_scope(
    conn: Connection, tmp_path: Any
) -> None:
    from pytest_mh_ansible.compat.utils.fs import LinuxFileSystem

    existing = tmp_path / "existing.conf"
    existing.write_text("old\n")
    existing.chmod(0o600)
    gone = tmp_path / "gone"
    gone.mkdir()
    (gone / "inner").write_text("x")
    host = _FsHost(conn)
    fs = LinuxFileSystem(host)  # type: ignore[arg-type]
    host.journal.open("test")
    fs.write(str(existing), "new\n", mode="0644", dedent=False)
    fs.append(str(existing), "more\n", dedent=False)
    assert fs.read(str(existing)) == "new\nmore"
    fs.mkdir_p(str(tmp_path / "a" / "b" / "c"))
    fs.rm(str(gone))
    tmp = fs.mktmp("temp")
    assert Path(tmp).read_text() == "temp"
    fs.sed("s/new/NEW/", str(existing), args=["-i"])  # pytest-mh edits in place only with -i
    assert existing.read_text() == "NEW\nmore\n"
    assert len(host.journal.entries()) == 4  # one entry per path, whatever the number of changes
    host.journal.close("test")
    assert existing.read_text() == "old\n"
    assert existing.stat().st_mode & 0o777 == 0o600
    assert (gone / "inner").read_text() == "x"
    assert not (tmp_path / "a").exists()
    assert not os.path.exists(tmp)


def test_compat__shells_quote_cwd_env_and_script_their_own_way() -> None:
    env = {"A": "it's", "B": 2}
    # pytest-mh's layout: exports, cd, a blank line, the script; all inside single quotes.
    bash_script = "export A='it'\"'\"'s'\nexport B=2\ncd '/tmp/a b'\n\necho $A"
    bash = Bash().build_command_line("echo $A", cwd="/tmp/a b", env=env)
    assert bash == "/usr/bin/env bash -c '" + bash_script.replace("'", "'\"'\"'") + "'"
    assert subprocess.run(["/bin/sh", "-c", bash.replace("echo $A", "printf %s $A")], capture_output=True,
                          text=True, cwd="/", check=False).stdout == "it's"  # fmt: skip
    quoted_a = "''it''" + '\\"' + "''" + '\\"' + "''s''"  # shlex's quoting, then PowerShell's
    ps_script = f"$Env:A = {quoted_a}\n$Env:B = 2\n\necho $Env:A"
    assert Powershell().build_command_line("echo $Env:A", cwd=None, env=env) == (
        f"powershell -NonInteractive -Command '{ps_script}'"
    )


def test_compat__process_timeout_error_takes_pytest_mh_arguments() -> None:
    err = ProcessTimeoutError(2.5, 7, "sleep 9", "/tmp", {"K": "v"}, None, "out", "err", host="h1")
    assert (err.timeout, err.id, err.rc, err.cwd, err.env) == (2.5, 7, 124, "/tmp", {"K": "v"})
    assert (err.stdout_lines, err.stderr_lines) == (["out"], ["err"])
    assert str(err).splitlines()[:3] == ["Command #7 timed out after 2.5 seconds", "Host: h1", "Command: sleep 9"]
    assert isinstance(err, pytest_mh_ansible.ProcessTimeoutError)


def test_host_connection__is_an_ssh_client_with_its_address_port_and_user_to_frameworks() -> None:
    """sssd-test-framework opens its own ssh sessions to ``host.conn.host:port`` only for an SSHClient."""
    from pytest_mh_ansible.compat.conn.ssh import SSHClient

    conn = HostConnection(
        AnsibleConnection("server1", {}, transport=_LocalTransport()), Bash(), host="10.213.0.12", port=2222, user="ci"
    )
    assert isinstance(conn, SSHClient)
    assert (conn.host, conn.port, conn.user) == ("10.213.0.12", 2222, "ci")
