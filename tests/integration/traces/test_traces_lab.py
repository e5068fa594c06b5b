"""Hosts are left as found, the tool's own traces included: /tmp, /var/lib and /root after a run equal before it.

A run takes leases (``/tmp/pytest-mh-ansible-leases``), makes Ansible's remote temporary directory
(``~/.ansible/tmp``), snapshots files (``/var/lib/mh-ansible/snapshots``) and starts warm agents: none
of it may stay on a host once the run ends. The fingerprint is read from inside the hosts (the lab's
``run_inside``), so that reading it leaves nothing either.
"""

from __future__ import annotations

import textwrap

import pytest

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

HOSTS = ("client1", "server1")

# Every entry under the watched trees: kind, mode and owner; a file's size and mtime too. A directory's
# own mtime is left out: creating and removing an entry in /tmp changes it, and leaves nothing behind.
FINGERPRINT = (
    "find /tmp /var/lib /root -xdev -path /var/lib/systemd -prune -o -type f -printf '%p f %m %U %G %s %T@\\n'"
    " -o -printf '%p %y %m %U %G\\n' 2>/dev/null | LC_ALL=C sort"
)

TESTS = textwrap.dedent("""
    import pytest

    @pytest.mark.topology(client=1, server=1)
    @pytest.mark.parametrize("n", range(2))
    def test_changes_on_both_hosts(client, server, n):
        for role in (client, server):
            role.host.ansible.run("ansible.builtin.copy", dest="/etc/mh-trace.conf", content=f"run {n}\\n")
            role.host.ansible.run("ansible.builtin.user", name="mhtrace", comment="made by a test")
            role.host.ansible.run("ansible.builtin.lineinfile", path="/etc/hosts", line="10.9.9.9 mhtrace")
            assert role.host.conn.run("cat /etc/mh-trace.conf").stdout == f"run {n}\\n"
""")


def _fingerprints(lab: Lab) -> dict[str, list[str]]:
    return {name: lab.run_inside(name, FINGERPRINT).stdout.splitlines() for name in HOSTS}


@pytest.mark.parametrize("executor", ["warm", "standard"])
def test_traces__a_run_leaves_tmp_var_lib_and_root_as_found(
    pytester: pytest.Pytester, trace_lab: Lab, executor: str
) -> None:
    before = _fingerprints(trace_lab)
    assert any(line.startswith("/var/lib/") for line in before["server1"])  # the fingerprint sees something
    pytester.makepyfile(test_traces=TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-i", str(trace_lab.inventory_path), "--mh-executor", executor, "-rA"
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    after = _fingerprints(trace_lab)
    for name in HOSTS:
        gained = sorted(set(after[name]) - set(before[name]))
        lost = sorted(set(before[name]) - set(after[name]))
        assert (gained, lost) == ([], []), f"{name}: gained {gained}, lost {lost}\n{result.stdout.str()[-2000:]}"
