"""Unit tests of behaviours a real pytest-mh suite (shadow-maint/shadow's tests/system) met through the layer.

Each test is a minimal reproduction written here, not the suite's code.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_mh_ansible import Connection as AnsibleConnection
from pytest_mh_ansible import plugin
from pytest_mh_ansible._private.ansible.transport import AnsibleTransport
from pytest_mh_ansible._private.secrets import MASK, SecretStore, secrets
from pytest_mh_ansible.compat.conn import Bash, HostConnection, ProcessError, ProcessTimeoutError
from pytest_mh_ansible.compat.conn.ssh import SSHClient, SSHProcessError, SSHProcessTimeoutError


def test_host_file_keys_are_data_not_secrets() -> None:
    # convert-mhc keeps a host file's own keys in mh_multihost_keys / mh_domain_keys; "*key*" must not make
    # the topology names in them secrets, or every report that names the topology is masked.
    store = SecretStore()
    store.add_from_vars(
        {
            "mh_multihost_keys": {"provisioned_topologies": ["shadow"]},
            "mh_domain_keys": {"ldap": {"bind_password": "Secret123-domain"}},
        }
    )
    assert store.mask("topology 'shadow-privileged' needs a host") == "topology 'shadow-privileged' needs a host"
    assert store.mask("bind with Secret123-domain") == f"bind with {MASK}"  # a secret-named key inside still is


def test_skip_report_keeps_its_tuple_when_masked() -> None:
    # pytest's -rs summary and --junitxml assert that a skip's longrepr is (path, line, reason).
    secrets.add("k-realsuite-skip-secret")
    report = pytest.TestReport(
        nodeid="t.py::test_a",
        location=("t.py", 1, "test_a"),
        keywords={},
        outcome="skipped",
        longrepr=("t.py", 2, "Skipped: needs k-realsuite-skip-secret"),
        when="setup",
    )
    plugin._mask_report(report)
    assert report.longrepr == ("t.py", 2, f"Skipped: needs {MASK}")


@pytest.fixture
def conn() -> Iterator[HostConnection]:
    transport = AnsibleTransport("localhost", {"ansible_connection": "local"})
    connection = HostConnection(AnsibleConnection("localhost", {}, transport=transport), Bash(), host="localhost")
    yield connection
    connection.disconnect()


def test_host_conn_raises_ssh_errors_as_pytest_mh_host_conn_does(conn: HostConnection) -> None:
    # A host's conn is an SSHClient to frameworks; pytest-mh's raises SSHProcessError (a ProcessError).
    assert isinstance(conn, SSHClient)
    with pytest.raises(SSHProcessError) as info:
        conn.run("echo 'passwd: unrecognized option' >&2; exit 6")
    assert isinstance(info.value, ProcessError)
    assert (info.value.rc, info.value.stderr) == (6, "passwd: unrecognized option")
    assert isinstance(conn.run("exit 6", raise_on_error=False).error, SSHProcessError)
    with pytest.raises(SSHProcessError), conn.async_run("exit 3"):
        pass
    assert type(info.value).__module__ == "pytest_mh_ansible.compat.conn.ssh"


def test_host_conn_timeouts_are_ssh_timeouts(conn: HostConnection) -> None:
    with pytest.raises(SSHProcessTimeoutError) as info:
        conn.run("echo partial; sleep 10", timeout=1)
    assert isinstance(info.value, ProcessTimeoutError)
    with pytest.raises(SSHProcessTimeoutError):
        conn.async_run("sleep 10").wait(timeout=1)
