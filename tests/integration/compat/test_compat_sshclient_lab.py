"""pytest-mh's ``SSHClient`` on a lab host: sessions as test users, with a password or a key.

The lab host's sshd takes passwords (``PasswordAuthentication yes``, ``KbdInteractiveAuthentication
no``, PAM). Each test makes its own users with ``useradd`` + ``chpasswd`` as root (the lab's key)
and removes them after. ``expect`` comes from the lab's offline package cache.
"""

from __future__ import annotations

import itertools
import re
import secrets as random
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from compat_suite_text import conftest
from labname import lab_name

from pytest_mh_ansible._private.lab.process import ProcessId, wait_for_port
from pytest_mh_ansible._private.secrets import secrets
from pytest_mh_ansible.compat.conn.ssh import (
    SSHAuthenticationError,
    SSHClient,
    SSHProcessError,
    SSHProcessTimeoutError,
)
from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

pytestmark = pytest.mark.integration

LAB_NAME = lab_name("mhssh")
APT = "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-download --no-install-recommends expect"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    spec = LabSpec(name=LAB_NAME, hosts=(LabHostSpec("server1", roles=("server",)),), packages=("expect",))
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab


@pytest.fixture(scope="module")
def address(lab: Lab) -> str:
    return next(host.address for host in lab.hosts if host.name == "server1")


@pytest.fixture(scope="module")
def root(lab: Lab, address: str) -> Iterator[SSHClient]:
    """server1 as root, logged in with the lab's key; expect installed."""
    with SSHClient(address, user="root", private_key_path=lab.key_path) as client:
        client.run(APT)
        yield client


User = tuple[str, str]
_NUMBERS = itertools.count(1)


@pytest.fixture
def make_user(root: SSHClient) -> Iterator[Callable[..., User]]:
    """Creates users with a home, a login shell and a password (``sudo=True``: may sudo with it); removed after."""
    made: list[str] = []

    def make(*, sudo: bool = False, shell: str = "/bin/bash") -> User:
        name = f"mhssh{next(_NUMBERS)}"
        password = f"Pw-{random.token_hex(8)}"
        root.exec(["useradd", "--create-home", "--shell", shell, name])
        made.append(name)
        root.run("chpasswd", input=f"{name}:{password}\n")
        if sudo:
            root.run(f"echo '{name} ALL=(ALL) ALL' > /etc/sudoers.d/{name} && chmod 0440 /etc/sudoers.d/{name}")
        return name, password

    yield make
    for name in made:
        # The user's sshd session may outlive its client by a moment: end it, then remove the user.
        root.run(f"pkill -KILL -u {name}; for _ in $(seq 50); do pgrep -u {name} >/dev/null || break; sleep 0.1; done")
        root.run(f"rm -f /etc/sudoers.d/{name}; userdel --force --remove {name}")


def no_process_left(root: SSHClient, user: str, name: str) -> bool:
    """No live process ``name`` of ``user`` within 5 s (a killed one may be a zombie until init reaps it)."""
    live = f"ps -u {user} -o stat=,comm= | awk '$1 !~ /^Z/ && $2 == \"{name}\"' | grep -q ."
    return root.run(f"for _ in $(seq 50); do {live} || exit 0; sleep 0.1; done; exit 1", raise_on_error=False).rc == 0


# -- logging in --------------------------------------------------------------------------------------------
def test_password_login_as_a_user(address: str, make_user: Callable[..., User]) -> None:
    user, password = make_user()
    ssh = SSHClient(address, user=user, password=password)
    assert not ssh.connected
    with ssh:
        assert ssh.connected
        result = ssh.run("id -un; echo $HOME")
        assert result.stdout_lines == [user, f"/home/{user}"]
        assert ssh.exec(["printf", "%s|", "a b", "c"]).stdout == "a b|c|"
    assert not ssh.connected


def test_first_command_connects(address: str, make_user: Callable[..., User]) -> None:
    user, password = make_user()
    ssh = SSHClient(address, user=user, password=password)
    try:
        assert ssh.run("whoami").stdout == user
        assert ssh.connected
    finally:
        ssh.disconnect()


def test_key_login_as_a_user(address: str, root: SSHClient, make_user: Callable[..., User], tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    user, _ = make_user()
    key = Ed25519PrivateKey.generate()
    key_path = tmp_path / "id_ed25519"
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption())
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    root.run(
        f"install -d -m 0700 -o {user} -g {user} /home/{user}/.ssh && "
        f"cat > /home/{user}/.ssh/authorized_keys && chown {user}: /home/{user}/.ssh/authorized_keys",
        input=public.decode() + "\n",
    )
    with SSHClient(address, user=user, private_key_path=key_path) as ssh:
        assert ssh.run("id -un").stdout == user


def test_wrong_password_raises_authentication_error(
    address: str, make_user: Callable[..., User], caplog: pytest.LogCaptureFixture
) -> None:
    user, password = make_user()
    wrong = "Wrong-" + password[::-1]
    caplog.set_level("DEBUG")
    ssh = SSHClient(address, user=user, password=wrong)
    with pytest.raises(SSHAuthenticationError) as info:
        ssh.connect()
    assert not ssh.connected
    message = str(info.value)
    assert user in message
    assert f"{address}:22" in message
    assert "Authentication failed" in message
    assert wrong not in message
    assert password not in message
    assert "Opening SSH connection" in caplog.text
    assert wrong not in caplog.text
    with pytest.raises(SSHAuthenticationError):
        SSHClient(address, user="nosuchuser", password=wrong).connect()


# -- passwords, su and sudo through expect -------------------------------------------------------------------
def test_password_change_through_expect_then_login_with_the_new_one(
    address: str, make_user: Callable[..., User], caplog: pytest.LogCaptureFixture
) -> None:
    user, old = make_user()
    new = f"New-{random.token_hex(8)}"
    caplog.set_level("DEBUG")
    with SSHClient(address, user=user, password=old) as ssh:
        result = ssh.expect(
            f"""
            set timeout 10
            proc answer {{prompt reply code}} {{
                expect {{
                    -re $prompt {{ send "$reply\\r" }}
                    timeout {{ exit $code }}
                    eof {{ exit $code }}
                }}
            }}
            spawn passwd
            answer "Current password: *$" "{old}" 201
            answer "\\nNew password: *$" "{new}" 202
            answer "Retype new password: *$" "{new}" 203
            expect {{
                "password updated successfully" {{}}
                timeout {{ exit 204 }}
            }}
            expect eof
            lassign [wait] pid spawnid os_error status
            exit $status
            """
        )
        assert result.rc == 0, result.stderr
    with SSHClient(address, user=user, password=new) as ssh:
        assert ssh.run("id -un").stdout == user
    with pytest.raises(SSHAuthenticationError):
        SSHClient(address, user=user, password=old).connect()
    # The old password reached the logs only as the expect script's input; masked there, as in every report.
    assert "Opening SSH connection" in caplog.text
    assert old not in secrets.mask(caplog.text)
    assert new not in secrets.mask(caplog.text)


def test_su_and_sudo_through_expect_as_a_user(address: str, make_user: Callable[..., User]) -> None:
    user, password = make_user(sudo=True)
    other, other_password = make_user()
    with SSHClient(address, user=user, password=password) as ssh:
        su = ssh.expect(
            f"""
            set timeout 15
            spawn su - {other} -c "id -un"
            expect "Password:"
            send "{other_password}\\r"
            expect {{
                "{other}" {{ exit 0 }}
                "Authentication failure" {{ exit 1 }}
                timeout {{ exit 201 }}
            }}
            """
        )
        assert su.rc == 0, su.stderr
        sudo = ssh.expect(
            f"""
            set timeout 15
            spawn sudo -k -p "sudo-asks:" id -un
            expect "sudo-asks:"
            send "{password}\\r"
            expect {{
                -re "\\nroot\\r" {{ exit 0 }}
                "try again" {{ exit 1 }}
                timeout {{ exit 201 }}
            }}
            """,
            verbose=False,
        )
        assert sudo.rc == 0, sudo.stdout
        bad = ssh.expect(
            f"""
            set timeout 15
            spawn su - {other} -c true
            expect "Password:"
            send "not-{other_password}\\r"
            expect {{
                "Authentication failure" {{ exit 7 }}
                timeout {{ exit 201 }}
            }}
            """
        )
        assert bad.rc == 7


# -- processes: streams, signals, waiting, time limits --------------------------------------------------------
def test_async_run_cat_fed_through_stdin(address: str, make_user: Callable[..., User]) -> None:
    user, password = make_user()
    with SSHClient(address, user=user, password=password) as ssh:
        process = ssh.async_run("cat")
        assert process.in_progress
        process.stdin.write("Hello\n")
        assert next(process.stdout) == "Hello"
        process.stdin.write(b"World\n")
        assert next(process.stdout) == "World"
        process.stdin.write("no newline")
        process.send_eof()
        result = process.wait()
        assert result.rc == 0
        assert result.stdout_lines == ["Hello", "World", "no newline"]
        assert not process.in_progress


@pytest.mark.parametrize("login_shell", ["/bin/bash", "/bin/sh"])
def test_sleep_ended_by_send_signal(
    address: str, root: SSHClient, make_user: Callable[..., User], login_shell: str
) -> None:
    # The pid line and the kill run in the user's login shell: bash, and dash (Debian's /bin/sh).
    user, password = make_user(shell=login_shell)
    with SSHClient(address, user=user, password=password) as ssh:
        process = ssh.async_run("sleep 30")
        start = time.monotonic()
        process.send_signal(signal.SIGTERM)
        result = process.wait(raise_on_error=False)
        assert time.monotonic() - start < 10
        assert result.rc == 128 + signal.SIGTERM
        # A script whose shell waits for its child: the whole process group gets the signal.
        process = ssh.async_run("echo started\nsleep 30\necho never")
        assert next(process.stdout) == "started"
        process.send_signal(signal.SIGINT)
        with pytest.raises(SSHProcessError) as info:
            process.wait()
        assert info.value.rc == 128 + signal.SIGINT
        assert info.value.stdout_lines == ["started"]
    assert no_process_left(root, user, "sleep")


def test_send_signal_that_the_command_traps(address: str, make_user: Callable[..., User]) -> None:
    user, password = make_user()
    with SSHClient(address, user=user, password=password) as ssh:
        process = ssh.async_run("trap 'echo got USR1; exit 5' USR1; echo ready; while :; do sleep 0.1; done")
        assert next(process.stdout) == "ready"
        process.send_signal(signal.SIGUSR1)
        result = process.wait(raise_on_error=False)
        assert (result.rc, result.stdout_lines) == (5, ["ready", "got USR1"])


def test_with_process_waits(address: str, make_user: Callable[..., User]) -> None:
    user, password = make_user()
    with SSHClient(address, user=user, password=password) as ssh:
        start = time.monotonic()
        with ssh.async_run("sleep 1; echo done") as process:
            assert process.in_progress
        assert time.monotonic() - start >= 1
        assert not process.in_progress
        with pytest.raises(SSHProcessError) as info, ssh.async_run("echo bad >&2; exit 3"):
            pass
        assert (info.value.rc, info.value.stderr) == (3, "bad")


def test_run_and_exec_with_env_cwd_input(address: str, make_user: Callable[..., User]) -> None:
    user, password = make_user()
    with SSHClient(address, user=user, password=password) as ssh:
        result = ssh.run('pwd; echo "$A|$B"; cat', cwd="/tmp", env={"A": "x 'y' z", "B": 2}, input="line1\nline2")
        assert result.stdout_lines == ["/tmp", "x 'y' z|2", "line1", "line2"]
        result = ssh.exec(["sh", "-c", 'echo "$0"; pwd; cat >&2; exit 4', "a b"], cwd="/", input="to stderr",
                          raise_on_error=False)  # fmt: skip
        assert (result.rc, result.stdout_lines, result.stderr) == (4, ["a b", "/"], "to stderr")
        with pytest.raises(SSHProcessError) as info:
            ssh.run("echo out; echo err >&2; exit 9")
        assert (info.value.rc, info.value.stdout, info.value.stderr) == (9, "out", "err")
        # A command that ends before reading all its input: its result, not an error about stdin.
        assert ssh.run("head -c 3", input="x" * 3_000_000).stdout == "xxx"
        assert ssh.run("exit 6", input="unread", raise_on_error=False).rc == 6
        crlf = ssh.run("printf 'a\\r\\nb\\r\\n'", unified_newlines=True)
        assert crlf.stdout_lines == ["a", "b"]


def test_timeout_kills_the_command(address: str, root: SSHClient, make_user: Callable[..., User]) -> None:
    user, password = make_user()
    with SSHClient(address, user=user, password=password, timeout=60) as ssh:
        start = time.monotonic()
        with pytest.raises(SSHProcessTimeoutError) as info:
            ssh.run("echo before; sleep 30", timeout=1)
        assert time.monotonic() - start < 10
        assert info.value.stdout_lines == ["before"]
        assert ssh.run("echo still usable").stdout == "still usable"
    assert no_process_left(root, user, "sleep")


def test_expect_nobody_as_root(root: SSHClient) -> None:
    result = root.expect_nobody(
        """
        spawn id -un
        expect eof
        """,
        verbose=False,
    )
    assert result.rc == 0
    assert "nobody" in result.stdout


def test_from_confdict_on_the_lab_host(address: str, make_user: Callable[..., User]) -> None:
    from pytest_mh_ansible.compat.conn import Bash
    from pytest_mh_ansible.compat.logger import logger_for

    class Host:
        hostname = "server1"
        shell = Bash()
        logger = logger_for("host", "server1")

    user, password = make_user()
    ssh = SSHClient.from_confdict(Host(), {"type": "ssh", "host": address, "username": user, "password": password})
    with ssh:
        assert ssh.run("id -un").stdout == user


# -- servers and connections that differ ---------------------------------------------------------------------
def test_password_answers_keyboard_interactive_when_the_server_takes_no_plain_password(
    lab: Lab, address: str, root: SSHClient, make_user: Callable[..., User]
) -> None:
    user, password = make_user()
    sshd = "sed -i 's/^PasswordAuthentication .*/PasswordAuthentication {}/; s/^KbdInteractiveAuthentication .*/KbdInteractiveAuthentication {}/' /etc/ssh/sshd_config && service ssh restart >/dev/null"  # noqa: E501
    root.run(sshd.format("no", "yes"))
    try:
        wait_until_listening(lab, address)
        with SSHClient(address, user=user, password=password) as ssh:
            assert ssh.run("id -un").stdout == user
        with pytest.raises(SSHAuthenticationError):
            SSHClient(address, user=user, password="not-" + password).connect()
    finally:
        result = lab.run_inside("server1", sshd.format("yes", "no"))
        assert result.returncode == 0, result.stderr
        wait_until_listening(lab, address)


def wait_until_listening(lab: Lab, address: str) -> None:
    """Wait for server1's restarted sshd to listen: ``service ssh restart`` returns once the new sshd has
    forked away, before it binds its port, and a connection right after it can be refused (seen once in CI)."""
    pid = next(host.pid for host in lab.hosts if host.name == "server1")
    assert pid is not None
    assert wait_for_port(address, 22, time.monotonic() + 30, ProcessId.of(pid)), "sshd did not listen again"


def test_lost_connection_ends_the_command_and_the_next_one_reconnects(
    address: str, root: SSHClient, make_user: Callable[..., User]
) -> None:
    user, password = make_user()
    with SSHClient(address, user=user, password=password) as ssh:
        process = ssh.async_run("echo up; sleep 30")
        assert next(process.stdout) == "up"
        root.run(f"pkill -KILL -u {user} -x sshd")  # the session's sshd: the connection drops
        result = process.wait(raise_on_error=False)
        assert result.rc == 255
        assert result.stdout_lines == ["up"]
        assert ssh.run("echo again").stdout == "again"
        assert ssh.connected


# -- in a pytest-mh suite, through the layer's plugin ---------------------------------------------------------
SUITE_CONFTEST = (
    conftest("from pytest_mh.conn.ssh import SSHClient", "")
    + """

def _ssh(self, user, password):
    # As frameworks write it (a role method): the host's address, shell and logger.
    return SSHClient(self.host.conn.host, user=user, password=password, shell=self.host.shell, logger=self.logger)


Role.ssh = _ssh
"""
)

SUITE_TESTS = """
import pytest
from pytest_mh import Topology, TopologyDomain, TopologyMark
from pytest_mh.conn.ssh import SSHAuthenticationError, SSHClient

ONE = TopologyMark(name="one", topology=Topology(TopologyDomain("default", server=1)),
                   fixtures=dict(server="default.server[0]"))
PASSWORD = "Pw-suite-4711-x"


@pytest.fixture
def suite_user(server):
    server.host.conn.run(f"useradd --create-home --shell /bin/bash suite1 && echo suite1:{PASSWORD} | chpasswd")
    yield "suite1"
    server.host.conn.run("pkill -KILL -u suite1; sleep 0.3; userdel --force --remove suite1", raise_on_error=False)


@pytest.mark.topology(ONE)
def test_login_as_a_user(server, suite_user):
    with server.ssh(suite_user, PASSWORD) as ssh:
        assert ssh.run("id -un").stdout == suite_user
        process = ssh.async_run("cat")
        process.stdin.write("through the layer\\n")
        assert next(process.stdout) == "through the layer"
        process.send_eof()
        assert process.wait().rc == 0
    with pytest.raises(SSHAuthenticationError):
        server.ssh(suite_user, "not-" + PASSWORD).connect()


@pytest.mark.topology(ONE)
def test_from_confdict_of_the_host(server, suite_user):
    ssh = SSHClient.from_confdict(server.host, {"username": suite_user, "password": PASSWORD})
    assert ssh.host == server.host.conn.host
    assert ssh.shell is server.host.shell
    with ssh:
        assert ssh.run("whoami").stdout == suite_user
"""


def test_sshclient_in_a_pytest_mh_suite(pytester: pytest.Pytester, lab: Lab) -> None:
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(test_ssh=SUITE_TESTS)
    result = pytester.runpytest_subprocess(
        "-p",
        "pytest_mh_ansible.compat.plugin",
        f"--mh-inventory={lab.inventory_path}",
        "-p",
        "no:cacheprovider",
        "-v",
        "-rA",
        "--log-level=INFO",
    )
    text = result.stdout.str()
    outcomes = dict(re.findall(r"^test_ssh\.py::(\w+)\[one\] (PASSED|FAILED|ERROR|SKIPPED)", text, re.MULTILINE))
    assert outcomes == {"test_login_as_a_user": "PASSED", "test_from_confdict_of_the_host": "PASSED"}, text
    # The captured logs of the report show the connection, never the password.
    assert "Opening SSH connection" in text
    assert "Pw-suite-4711-x" not in text
