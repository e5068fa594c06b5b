"""Local files on lab hosts: artifact archives are 0600; snapshot names with spaces and quotes are quoted."""

from __future__ import annotations

import os
import stat
import textwrap

import pytest
import yaml

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

TESTS = textwrap.dedent("""
    import shlex

    import pytest
    from pytest_mh_ansible import MultihostBackupHost

    @pytest.mark.topology(client=1)
    def test_snapshot_name_with_space_and_quotes(client):
        name = "mh snap 'quoted' \\"x\\""
        path = shlex.quote(f"/var/lib/mh-ansible/snapshots/{name}")
        client.host.conn.run(f"mkdir -p -- {path} /var/lib/mh-ansible/snapshots/mh")  # "mh": what an unquoted rm hits
        MultihostBackupHost.remove_backup(client.host, name)
        assert client.host.conn.run(f"test -e {path}", raise_on_error=False).rc == 1
        assert client.host.conn.run("test -d /var/lib/mh-ansible/snapshots/mh", raise_on_error=False).rc == 0
        client.host.conn.run("rmdir /var/lib/mh-ansible/snapshots/mh")

    @pytest.mark.topology(client=1)
    def test_artifacts(client):
        client.host.conn.run("mkdir -p /var/log/mhpriv && echo private-log > /var/log/mhpriv/app.log")
        assert False, "collect the artifacts"
""")


def test_private_files_lab__stdin_artifacts_and_quoted_names(pytester: pytest.Pytester, rep_lab: Lab) -> None:
    extra = pytester.path / "artifacts.yml"
    extra.write_text(yaml.safe_dump({"all": {"hosts": {"client1": {"mh_artifacts": ["/var/log/mhpriv/*.log"]}}}}))
    pytester.makeini("[pytest]\nmh_default_domain = default\n")
    pytester.makepyfile(test_priv=TESTS)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        f"--mh-inventory={rep_lab.inventory_path}",
        f"--mh-inventory={extra}",
        "--mh-compress-artifacts",
    )
    result.assert_outcomes(passed=1, failed=1)
    archives = list((pytester.path / "artifacts").rglob("*.tar.gz"))
    assert archives, result.stdout.str()
    for archive in archives:
        assert stat.S_IMODE(os.stat(archive).st_mode) == 0o600
