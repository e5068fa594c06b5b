"""pytest-mh's Coredumpd, Auditd and SELinux through the compatibility layer, on a lab host.

A pytest-mh-style suite (``pytest_mh`` imports only) runs with ``-p pytest_mh_ansible.compat.plugin``
on one sysv lab host. Its tests make real core dumps (``kill -SEGV`` of a process with ``ulimit -c
unlimited``) and plant AVC records in ``/var/log/audit/audit.log``, read by a real ``ausearch``
(unpacked from the Debian package, without the daemon: this kernel has no SELinux and no audit
daemon runs). The outer test checks each inner test's outcome per mode: passed, ``PASSED/COREDUMP``
(warn) or failed (fail). SELinux on a host without it must raise a ``ValueError`` that says so.
"""

from __future__ import annotations

import re
import subprocess
import textwrap
from collections.abc import Iterator

import pytest
from compat_suite_text import conftest
from labname import lab_name

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

pytestmark = pytest.mark.integration

LAB_NAME = lab_name("mhccd")

CONFTEST = conftest(
    """
    from pytest_mh.utils.auditd import Auditd
    from pytest_mh.utils.coredumpd import Coredumpd
    from pytest_mh.utils.fs import LinuxFileSystem
    from pytest_mh.utils.selinux import SELinux
    """,
    """
    self.fs = LinuxFileSystem(self.host)
    self.coredumpd = Coredumpd(self.host, self.fs, mode="warn")
    self.auditd = Auditd(self.host, avc_mode="warn")
    self.selinux = SELinux(self.host)
    """,
)

TESTS = textwrap.dedent("""
    import shlex

    import pytest
    from pytest_mh import Topology, TopologyDomain, TopologyMark

    ONE = TopologyMark(
        name="one",
        topology=Topology(TopologyDomain("default", client=1)),
        fixtures=dict(client="default.client[0]"),
    )
    AVC = (
        'type=AVC msg=audit(NOW.123:4242): avc:  denied  {{ read }} for  pid=4242 comm="mhccd-app" '
        'name="secret" dev="tmpfs" ino=42 scontext=system_u:system_r:mhccd_t:s0 '
        'tcontext=system_u:object_r:shadow_t:s0 tclass=file permissive=0'
    )


    def crash(client):
        # A real core dump: sleep killed by SIGSEGV in /tmp (kernel.core_pattern 'core' writes it there).
        client.host.conn.run("cd /tmp; ulimit -c unlimited; sleep 100 & p=$!; sleep .3; kill -SEGV $p; wait; :")


    def deny(client):
        # ausearch -ts has whole seconds and the test start is rounded: a second later is surely after it.
        now = client.host.conn.run("sleep 1; date +%s").stdout.strip()
        line = shlex.quote(AVC.replace("NOW", now))
        client.host.conn.run(f"echo {{line}} >> /var/log/audit/audit.log")


    @pytest.mark.topology(ONE)
    def test_core_1__warn(client):
        crash(client)


    @pytest.mark.topology(ONE)
    def test_core_2__fail(client):
        client.coredumpd.mode = "fail"
        crash(client)


    @pytest.mark.topology(ONE)
    def test_core_3__ignore(client):
        client.coredumpd.mode = "ignore"
        crash(client)


    @pytest.mark.topology(ONE)
    def test_core_4__fail_filtered_out(client):
        client.coredumpd.mode = "fail"
        client.coredumpd.filter = "no-such-program"
        crash(client)


    @pytest.mark.topology(ONE)
    def test_core_5__fail_no_new_core(client):
        client.coredumpd.mode = "fail"
        assert client.coredumpd.list_core_files() == []  # the cores of the earlier tests are older


    @pytest.mark.topology(ONE)
    def test_core_6__listed(client):
        crash(client)
        found = client.coredumpd.list_core_files()
        assert len(found) == 1 and found[0].startswith("/tmp/core"), found
        assert client.host.conn.run(f"test -s {{found[0]}}", raise_on_error=False).rc == 0
        client.coredumpd.mode = "ignore"


    @pytest.mark.topology(ONE)
    def test_avc_0__fail_nothing_logged(client):
        client.auditd.avc_mode = "fail"


    @pytest.mark.topology(ONE)
    def test_avc_1__warn(client):
        deny(client)


    @pytest.mark.topology(ONE)
    def test_avc_2__fail(client):
        client.auditd.avc_mode = "fail"
        deny(client)


    @pytest.mark.topology(ONE)
    def test_avc_3__fail_filtered_out(client):
        client.auditd.avc_mode = "fail"
        client.auditd.avc_filter = "comm=.other-app."
        deny(client)


    @pytest.mark.topology(ONE)
    def test_avc_4__fail_filter_matches(client):
        client.auditd.avc_mode = "fail"
        client.auditd.avc_filter = "comm=.mhccd-app."
        deny(client)



    @pytest.mark.topology(ONE)
    def test_avc_5__the_project_s_crash_check_sees_it_too(client):
        client.auditd.avc_mode = "ignore"
        deny(client)
        found = client.host.crashes.check()
        assert [c.kind for c in found] == ["denial"], found
        assert "mhccd-app" in found[0].detail


    @pytest.mark.topology(ONE)
    def test_selinux__no_selinux_on_the_host(client):
        with pytest.raises(ValueError, match="SELinux is not enabled"):
            client.selinux.get_file_context("/etc/passwd")
        assert client.selinux.get_file_context("/no/such/file") is None
""")

EXPECTED = {
    "test_core_1__warn": "PASSED/COREDUMP",
    "test_core_2__fail": "FAILED",
    "test_core_3__ignore": "PASSED",
    "test_core_4__fail_filtered_out": "PASSED",
    "test_core_5__fail_no_new_core": "PASSED",
    "test_core_6__listed": "PASSED",
    "test_avc_0__fail_nothing_logged": "PASSED",
    "test_avc_1__warn": "PASSED/AVC",  # the verbose word is "PASSED/AVC DENIAL"
    "test_avc_2__fail": "FAILED",
    "test_avc_3__fail_filtered_out": "PASSED",
    "test_avc_4__fail_filter_matches": "FAILED",
    "test_avc_5__the_project_s_crash_check_sees_it_too": "PASSED",
    "test_selinux__no_selinux_on_the_host": "PASSED",
}

# A real ausearch from the Debian package, unpacked beside the system (no maintainer scripts, no daemon).
INSTALL_AUSEARCH = r"""
set -e
mkdir -p /opt/mhccd-audit
for deb in /var/cache/apt/archives/auditd_*.deb /var/cache/apt/archives/libauparse0_*.deb; do
    dpkg-deb -x "$deb" /opt/mhccd-audit
done
bin=$(find /opt/mhccd-audit -name ausearch -type f | head -n 1)
lib=$(dirname "$(find /opt/mhccd-audit -name 'libauparse.so*' | head -n 1)")
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$lib" "$bin" > /usr/local/sbin/ausearch
chmod 0755 /usr/local/sbin/ausearch
mkdir -p /var/log/audit
: > /var/log/audit/audit.log
command -v ausearch
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """client1 (sysv), with the auditd package's files in its apt archives."""
    spec = LabSpec(name=LAB_NAME, hosts=(LabHostSpec("client1", roles=("client",)),), packages=("auditd",))
    with Lab(spec, tmp_path_factory.mktemp("labs") / LAB_NAME) as lab:
        yield lab


def _ssh(lab: Lab, script: str) -> str:
    proc = subprocess.run(
        ["ssh", "-F", str(lab.ssh_config_path), "client1", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_compat_crash_utils__modes_on_real_cores_and_planted_denials(pytester: pytest.Pytester, lab: Lab) -> None:
    pattern = _ssh(lab, "cat /proc/sys/kernel/core_pattern").strip()
    if pattern.startswith("|"):
        pytest.skip(f"kernel.core_pattern {pattern!r} pipes cores to a handler the utility cannot read")
    assert _ssh(lab, INSTALL_AUSEARCH).strip() == "/usr/local/sbin/ausearch"
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_crash=TESTS.format())
    result = pytester.runpytest_subprocess(
        "-p",
        "pytest_mh_ansible.compat.plugin",
        f"--mh-inventory={lab.inventory_path}",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-v",
        "-rA",
    )
    text = result.stdout.str()
    outcomes = dict(re.findall(r"^test_crash\.py::(\w+)\[one\] (PASSED\S*|FAILED|ERROR|SKIPPED)\b.*%\]$", text, re.M))
    assert outcomes == EXPECTED, text
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text
    # fail mode: the failure text names the utility and lists the core / the denial
    assert re.search(
        r"core dumps on host 'client1' during the test \(Coredumpd, mode 'fail'\):\s+client1: /tmp/core", text
    )
    assert re.search(
        r"AVC denials on host 'client1' during the test \(Auditd, mode 'fail'\):\s+client1: .*mhccd-app", text
    )
    # warn mode: pytest-mh's summary categories, and the list at the end of the run
    summary = text.strip().splitlines()[-1]
    for count in ("3 failed", "8 passed", "1 COREDUMPS", "1 AVC DENIALS"):
        assert count in summary, summary
    assert "findings of utilities in 'warn' mode" in text
    assert re.search(r"test_core_1__warn\[one\] \(Coredumpd\):\n\s+client1: /tmp/core", text), text
