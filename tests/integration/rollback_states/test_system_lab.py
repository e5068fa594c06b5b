"""Services, packages and kernel settings that were there before a test survive its module changes.

On a systemd lab host, each pre-existing object in an unusual state is changed by the module a test
would use on it: units masked, failed, static, enabled at runtime only, with a drop-in; packages
installed automatically (apt's marks) and held; a sysctl key that is read-only on the host and one
that does not exist. After the rollback the host's state is as before, or the report says, by name,
what was not reverted and why. Nothing that existed is deleted.
"""

from __future__ import annotations

import textwrap

import pytest

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

SUITE = textwrap.dedent('''
    import difflib

    import pytest
    from pytest_mh_ansible import ModuleError, Topology, TopologyDomain, TopologyMark

    SYSTEMD = TopologyMark(
        "systemd", Topology(TopologyDomain("default", server=1)), fixtures=dict(server="default.server[0]")
    )
    UNITS = "mh-masked mh-failed mh-static mh-rt mh-drop"
    FINGERPRINT = (
        f"for u in {UNITS}; do echo $u $(systemctl is-active $u) $(systemctl is-enabled $u 2>&1) "
        "$(systemctl show -p NeedDaemonReload --value $u); done; "
        "md5sum /etc/systemd/system/mh-drop.service.d/*.conf /etc/sysctl.conf; ls /etc/sysctl.d; "
        "dpkg-query -W -f='${db:Status-Abbrev} ${Package}\\\\n' tree cowsay libtext-charwidth-perl 2>&1; "
        "apt-mark showauto | grep -x libtext-charwidth-perl; apt-mark showhold; "
        "md5sum /var/lib/apt/extended_states; sysctl -n kernel.pid_max net.ipv4.ip_forward"
    )
    BEFORE = {}
    # A failed unit is stopped, not failed again; a runtime enablement becomes a plain one: reported.
    REPORTED = [
        "mh-failed failed disabled no",
        "mh-failed inactive disabled no",
        "mh-rt inactive enabled-runtime no",
        "mh-rt inactive enabled no",
    ]

    SETUP = """
    set -e
    cd /lib/systemd/system
    for u in mh-masked mh-failed mh-static mh-rt mh-drop; do
        printf '[Service]\\\\nExecStart=/bin/sleep infinity\\\\n' > $u.service
    done
    for u in mh-masked mh-failed mh-rt mh-drop; do
        printf '[Install]\\\\nWantedBy=multi-user.target\\\\n' >> $u.service
    done
    cd /etc/systemd/system; mkdir -p mh-drop.service.d
    printf '[Service]\\\\nEnvironment=MH=1\\\\n' > mh-drop.service.d/override.conf
    systemctl daemon-reload
    systemctl mask mh-masked
    systemctl start mh-failed; systemctl kill --signal=KILL mh-failed; sleep 0.3
    systemctl enable --runtime mh-rt
    systemctl start mh-drop
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q cowsay tree >/dev/null
    apt-mark hold tree >/dev/null
    """

    def fingerprint(host):
        return host.conn.run(FINGERPRINT, raise_on_error=False).stdout

    @pytest.mark.topology(SYSTEMD)
    def test_0_set_up_the_states(server):
        server.host.conn.run(SETUP)
        BEFORE["fp"] = fingerprint(server.host)
        assert "mh-failed failed" in BEFORE["fp"]

    @pytest.mark.topology(SYSTEMD)
    def test_1_change_each_object(server):
        run = server.host.ansible.run
        assert run("ansible.builtin.systemd_service", name="mh-masked", masked=False).changed
        assert run("ansible.builtin.systemd_service", name="mh-failed", state="started").changed
        assert run("ansible.builtin.systemd_service", name="mh-static", state="started").changed
        assert run("ansible.builtin.systemd_service", name="mh-rt", enabled=True).changed
        assert run("ansible.builtin.copy", dest="/etc/systemd/system/mh-drop.service.d/override.conf",
                   content="[Service]\\\\nEnvironment=MH=2\\\\n").changed
        run("ansible.builtin.systemd_service", name="mh-drop", state="restarted", daemon_reload=True)
        run("ansible.builtin.apt", name="libtext-charwidth-perl", state="present")
        assert run("ansible.builtin.apt", name="tree", state="absent", allow_change_held_packages=True).changed
        with pytest.raises(ModuleError):
            run("ansible.posix.sysctl", name="kernel.pid_max", value="65536", sysctl_set=True)
        with pytest.raises(ModuleError):
            run("ansible.posix.sysctl", name="net.ipv4.no_such_key", value="1", sysctl_set=True)

    @pytest.mark.topology(SYSTEMD)
    def test_2_every_object_is_as_before(server):
        now = fingerprint(server.host)
        diff = list(difflib.unified_diff(BEFORE["fp"].splitlines(), now.splitlines(), lineterm="", n=0))
        changed = [line[1:] for line in diff if line[:1] in "+-" and line[:3] not in ("---", "+++")]
        # What the journal reports as not reverted (the outer test checks the report): nothing else.
        assert sorted(changed) == sorted(REPORTED), "\\\\n".join(diff)
''')


def test_system__services_packages_sysctl_in_unusual_states__restored_or_reported(
    pytester: pytest.Pytester, states_lab: Lab
) -> None:
    pytester.makepyfile(test_states=SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--mh-inventory={states_lab.inventory_path}", "--mh-limit=server2", "-v", "-rA"
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*not reverted: ansible.builtin.systemd_service name=mh-failed state=started: service 'mh-failed' was "
            "failed before the call*",
            "*not reverted: ansible.builtin.systemd_service name=mh-rt: whether service 'mh-rt' starts at boot was "
            "'enabled-runtime'*",
        ],
        consecutive=False,
    )
    # apt marked an auto-installed package manual and said "not changed": caught, and its mark put back
    assert "[server2] reverted: ansible.builtin.apt name=libtext-charwidth-perl state=present" in result.stdout.str()
    # the module refused the read-only key and the unknown one; their file is as it was (checked above)
    assert "reverted: ansible.posix.sysctl name=kernel.pid_max (failed" in result.stdout.str()
