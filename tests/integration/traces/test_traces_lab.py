"""Hosts are left as found, the tool's own traces included: /tmp, /var/lib and /root after a run equal before it.

A run takes leases (``/tmp/pytest-mh-ansible-leases``), makes Ansible's remote temporary directory
(``~/.ansible/tmp``), snapshots files (``/var/lib/mh-ansible/snapshots``), keeps its journal beside them
and starts warm agents: none of it may stay on a host once the run ends. ``/tmp`` and ``/dev/shm``
(the hosts' own tmpfs) are read from inside the hosts (the lab's ``run_inside``, which leaves nothing);
``/var/lib``, ``/var/tmp`` and ``/root`` from each host's overlay upper directory, which holds exactly
what the host wrote (the machine's own files below it change as other processes of the machine run).
"""

from __future__ import annotations

import stat
import textwrap
from pathlib import Path

import pytest

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

HOSTS = ("client1", "server1")

# Every entry under the watched trees: kind, mode and owner; a file's size and mtime too. A directory's
# own mtime is left out: creating and removing an entry in /tmp changes it, and leaves nothing behind.
TMPFS = "find /tmp /dev/shm -xdev -type f -printf '%p f %m %U %G %s %T@\\n' -o -printf '%p %y %m %U %G\\n'"
WRITTEN = ("var/lib", "var/tmp", "root")  # in the upper directory; a deletion is a whiteout (a 0/0 char device)
SKIPPED = ("var/lib/systemd",)  # systemd's own state (timers, random seed) changes as the host runs


def _written(upper: Path) -> set[str]:
    lines: set[str] = set()
    for top in WRITTEN:
        for path in [upper / top, *sorted((upper / top).rglob("*"))] if (upper / top).exists() else []:
            relative = path.relative_to(upper).as_posix()
            if any(relative == skip or relative.startswith(skip + "/") for skip in SKIPPED):
                continue
            st = path.lstat()
            kind = "f" if stat.S_ISREG(st.st_mode) else "d" if stat.S_ISDIR(st.st_mode) else "other"
            line = f"/{relative} {kind} {stat.S_IMODE(st.st_mode):o} {st.st_uid} {st.st_gid}"
            lines.add(line + (f" {st.st_size} {st.st_mtime_ns}" if kind == "f" else ""))
    return lines


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


def _fingerprints(lab: Lab) -> dict[str, set[str]]:
    return {
        name: set(lab.run_inside(name, TMPFS).stdout.splitlines()) | _written(lab.host_dir(name) / "upper")
        for name in HOSTS
    }


@pytest.mark.parametrize("executor", ["warm", "standard"])
def test_traces__a_run_leaves_tmp_var_lib_and_root_as_found(
    pytester: pytest.Pytester, trace_lab: Lab, executor: str
) -> None:
    before = _fingerprints(trace_lab)
    assert any(line.startswith("/var/lib/") for line in before["server1"])  # the fingerprint sees something
    assert any(line.startswith("/tmp/") for line in before["server1"])
    pytester.makepyfile(test_traces=TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-i", str(trace_lab.inventory_path), "--mh-executor", executor, "-rA"
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    after = _fingerprints(trace_lab)
    for name in HOSTS:
        gained, lost = sorted(after[name] - before[name]), sorted(before[name] - after[name])
        assert (gained, lost) == ([], []), f"{name}: gained {gained}, lost {lost}\n{result.stdout.str()[-2000:]}"
