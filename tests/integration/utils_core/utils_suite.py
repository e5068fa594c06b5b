"""The suite that test_utils_core.py runs in a pytester subprocess against the lab (not collected)."""

from __future__ import annotations

import pytest

from pytest_mh_ansible import MultihostError, Topology, TopologyDomain, TopologyMark

SYSV = TopologyMark("sysv", Topology(TopologyDomain("default", server=1)), fixtures=dict(server="default.server[0]"))
BOTH = TopologyMark(
    "both",
    Topology(TopologyDomain("default", server=2)),
    fixtures=dict(sysv="default.server[0]", sd="default.server[1]"),
)

STATE = (
    "stat -c '%n %a %U %G' /etc/hosts /etc/mh-dir /etc/mh-file /etc/mh-app.ini 2>&1; "
    "md5sum /etc/hosts /etc/motd /etc/mh-file 2>&1; getent passwd alice labuser; getent group mhgroup; "
    "getent shadow labuser; id -Gn labuser; "
    # cowsay brings libtext-charwidth-perl, which apt marks auto-installed: its mark must go with it
    "dpkg-query -W -f='${db:Status-Abbrev}\n' tree cowsay libtext-charwidth-perl 2>&1; "
    "md5sum /var/lib/apt/extended_states; cat /proc/sys/net/ipv4/ip_forward; "
    "service mh-demo status >/dev/null 2>&1; echo demo=$?; ls /etc/rc2.d | grep -c mh-demo; "
    "systemctl is-active mh-demo 2>/dev/null; systemctl is-enabled mh-demo 2>/dev/null; ls /tmp"
)
BEFORE = {}


def state(host):
    return host.conn.run(STATE, raise_on_error=False).stdout


SYSV_SCRIPT = (
    "#!/bin/sh\n### BEGIN INIT INFO\n# Provides: mh-demo\n# Default-Start: 2 3 4 5\n"
    "# Default-Stop: 0 1 6\n### END INIT INFO\n"
    'case "$1" in start) touch /run/mh-demo;; stop) rm -f /run/mh-demo;; '
    "restart|reload|force-reload) touch /run/mh-demo;; status) test -e /run/mh-demo;; esac\n"
)


@pytest.mark.topology(BOTH)
def test_00_record_clean_state(sysv, sd):
    # A demo service on each init system, installed outside the journal (kept for the session).
    sysv.host.conn.run("cat > /etc/init.d/mh-demo && chmod 755 /etc/init.d/mh-demo", input=SYSV_SCRIPT)
    sd.host.conn.run(
        "cat > /etc/systemd/system/mh-demo.service && systemctl daemon-reload && systemctl enable --now mh-demo",
        input="[Service]\nExecStart=/bin/sleep infinity\nExecReload=/bin/true\n[Install]\nWantedBy=multi-user.target\n",
    )
    BEFORE["sysv"], BEFORE["sd"] = state(sysv.host), state(sd.host)


@pytest.mark.topology(BOTH)
def test_01_fs(sysv, sd):
    fs = sysv.fs
    assert fs.write(
        "/etc/mh-file",
        """
        a = 1
    """,
        mode="0640",
        group="adm",
    )
    assert fs.read("/etc/mh-file") == "a = 1\n"
    fs.append("/etc/mh-file", "b = 2\n")
    assert fs.read("/etc/mh-file") == "a = 1\nb = 2\n"
    assert not fs.write("/etc/mh-file", "a = 1\nb = 2\n", dedent=False)  # same content: unchanged
    hosts = fs.read("/etc/hosts")
    assert fs.write("/etc/hosts", hosts + "10.0.0.99 mh-extra\n", dedent=False)  # an existing file
    assert fs.read("/etc/hosts").endswith("mh-extra\n")
    st = fs.stat("/etc/mh-file")
    assert st["mode"] == "0640"
    assert st["gr_name"] == "adm"
    fs.mkdir("/etc/mh-dir", mode="0700")
    fs.mkdir_p("/etc/mh-dir/a/b")
    assert fs.exists("/etc/mh-dir/a/b")
    fs.touch("/etc/mh-dir/t")
    fs.copy("/etc/hosts", "/etc/mh-dir/hosts")
    assert fs.read("/etc/mh-dir/hosts") == fs.read("/etc/hosts")
    fs.chmod("0600", "/etc/hosts")
    fs.chown("/etc/hosts", "labuser", "labuser")
    assert fs.stat("/etc/hosts")["pw_name"] == "labuser"
    fs.rm("/etc/motd")
    assert not fs.exists("/etc/motd")
    tmp = fs.mktmp(directory=True)
    assert fs.exists(tmp)
    fs.backup("/etc/hosts")
    sysv.host.conn.run("echo junk >> /etc/hosts")
    fs.restore("/etc/hosts")
    assert "junk" not in fs.read("/etc/hosts")
    fs.backup("/etc/hosts")
    sysv.host.conn.run("echo forgotten >> /etc/hosts")  # no restore: the journal does it
    fs.wait_for_path("/etc/mh-dir/t", timeout=5)
    assert state(sysv.host) != BEFORE.get("sysv")


@pytest.mark.topology(BOTH)
def test_02_fs_back(sysv, sd):
    assert state(sysv.host).splitlines() == BEFORE["sysv"].splitlines()


@pytest.mark.topology(BOTH)
def test_03_services(sysv, sd):
    for role in (sysv, sd):
        was = role.svc.status("mh-demo")
        role.svc.restart("mh-demo")
        assert role.svc.is_active("mh-demo")
        role.svc.stop("mh-demo")
        assert not role.svc.is_active("mh-demo")
        role.svc.start("mh-demo")
        role.svc.reload("mh-demo")
        if was["enabled"]:
            role.svc.disable("mh-demo")
            assert not role.svc.status("mh-demo")["enabled"]
        else:
            role.svc.enable("mh-demo")
            assert role.svc.status("mh-demo")["enabled"]
    sd.svc.stop("mh-demo")


@pytest.mark.topology(BOTH)
def test_04_services_back(sysv, sd):
    assert state(sysv.host).splitlines() == BEFORE["sysv"].splitlines()
    assert state(sd.host).splitlines() == BEFORE["sd"].splitlines()
    assert sd.svc.status("mh-demo") == {"active": True, "enabled": True}


@pytest.mark.topology(BOTH)
def test_05_users_then_fail(sysv, sd):
    u = sysv.users
    u.add_group("mhgroup", gid=4242)
    u.add("alice", uid=4243, groups=["mhgroup"], shell="/bin/sh", password="Sup3r-S3cret")
    alice = u.get("alice")
    assert alice["uid"] == 4243
    assert alice["groups"] == ["mhgroup"]
    assert alice["shell"] == "/bin/sh"
    assert sysv.host.conn.run("getent shadow alice").stdout.split(":")[1].startswith("$6$")
    u.modify("labuser", shell="/bin/sh")
    u.set_password("labuser", "An0ther-S3cret")
    u.add_member("mhgroup", "labuser")
    assert "mhgroup" in u.get("labuser")["groups"]
    u.remove_member("mhgroup", "labuser")
    u.add_member("mhgroup", "labuser")
    u.add("bob")
    u.add_group("bobs")
    # Gone behind the journal's back: their undo (userdel, groupdel) finds nothing left to do.
    sysv.host.conn.run("userdel --remove bob && groupdel bobs")
    raise AssertionError("the test fails: users and groups are restored all the same")


@pytest.mark.topology(BOTH)
def test_06_users_back(sysv, sd):
    assert state(sysv.host).splitlines() == BEFORE["sysv"].splitlines()
    assert sysv.users.get("alice") is None


@pytest.mark.topology(BOTH)
def test_07_delete_user(sysv, sd):
    sysv.users.delete("labuser")
    assert sysv.users.get("labuser") is None


@pytest.mark.topology(BOTH)
def test_08_user_recreated(sysv, sd):
    assert state(sysv.host).splitlines() == BEFORE["sysv"].splitlines()


@pytest.mark.topology(BOTH)
def test_09_packages_sysctl_config(sysv, sd):
    sysv.pkg.install("tree", "cowsay")
    assert sysv.pkg.is_installed("tree")
    assert sysv.pkg.is_installed("cowsay")
    sysv.sysctl.set("net.ipv4.ip_forward", 1)
    assert sysv.sysctl.get("net.ipv4.ip_forward") == "1"
    with pytest.raises(MultihostError, match=r"server1.*kernel.pid_max.*share the machine's kernel"):
        sysv.sysctl.set("kernel.pid_max", 4194303)
    cf = sysv.config_files
    cf.ini("/etc/mh-app.ini", "main", "port", "8080")
    cf.line("/etc/hosts", "192.0.2.9 extra")
    cf.line("/etc/hosts", "192.0.2.10 extra", regexp="^192.0.2.9 ")
    cf.block("/etc/motd", "managed\ntext")
    assert "192.0.2.10 extra" in sysv.fs.read("/etc/hosts")
    assert "port = 8080" in sysv.fs.read("/etc/mh-app.ini")


@pytest.mark.topology(BOTH)
def test_10_back(sysv, sd):
    assert state(sysv.host).splitlines() == BEFORE["sysv"].splitlines()


@pytest.mark.topology(BOTH)
def test_11_remove_installed_package(sysv, sd):
    sysv.pkg.install("tree")  # session-kept? no: test scope, removed after
    sysv.pkg.remove("tree")
    assert not sysv.pkg.is_installed("tree")


@pytest.fixture
def broken(sysv):
    sysv.fs.write("/etc/mh-file", "from a fixture\n")
    sysv.users.add("alice")
    sysv.svc.start("mh-demo")
    sysv.pkg.install("cowsay")
    sysv.sysctl.set("net.ipv4.ip_forward", 1)
    sysv.config_files.line("/etc/hosts", "192.0.2.9 extra")
    raise RuntimeError("the fixture fails after its changes")


@pytest.mark.topology(BOTH)
def test_12_failing_setup(sysv, sd, broken):
    pass


@pytest.mark.topology(BOTH)
def test_13_back_after_failing_setup(sysv, sd):
    assert state(sysv.host).splitlines() == BEFORE["sysv"].splitlines()
