"""Files that were there before a test, in unusual states, survive its module changes and their rollback.

Each path is changed by the module a test would use on it (``copy``, ``file``, ``lineinfile``); after the
rollback its kind, content, mode, owner (a uid without a name too), ACLs, extended attributes, file
attributes (immutable), capabilities, link count and sparseness are as before. What cannot be restored
exactly must be reported "not reverted" with the path and why; nothing is silently lost.
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

    SYSV = TopologyMark(
        "sysv", Topology(TopologyDomain("default", server=1)), fixtures=dict(server="default.server[0]")
    )
    D = "/srv/st"
    FINGERPRINT = (
        f"cd {D} && find . -printf '%p %y %m %U %G %s %n %b %l\\\\n' | sort; "
        "getfacl -R -p -n . 2>&1 | grep -v '^$'; getfattr -R -h -d -m - . 2>&1; "
        "lsattr -d . ./immutable.conf 2>&1 | sed 's/ .*//'; getcap -r . 2>&1 | sort; "
        "find . -type f ! -name immutable.conf -exec md5sum {} + | sort; "
        "stat -c '%i' a.conf b.conf | uniq | wc -l"
    )
    BEFORE = {}

    SETUP = f"""
    set -e
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q acl attr >/dev/null
    mkdir -p {D}; cd {D}
    echo acl > acl.conf; setfacl -m u:nobody:r,g:adm:rw acl.conf
    echo xattr > xattr.conf; setfattr -n user.mh -v kept xattr.conf
    echo locked > immutable.conf
    echo linked > a.conf; ln a.conf b.conf
    printf head > sparse.img; truncate -s 4M sparse.img
    mkfifo fifo; mknod null c 1 3
    python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.bind('{D}/app.sock')"; chmod 0640 app.sock
    echo target > target.conf; ln -s target.conf link.conf
    cp /bin/true suid.bin; chmod 4755 suid.bin
    cp /bin/true sgid.bin; chown :adm sgid.bin; chmod 2755 sgid.bin
    cp /bin/true cap.bin; setcap cap_net_raw+ep cap.bin
    echo nobody-owns > noname.conf; chown 4321:4321 noname.conf
    """

    def fingerprint(host):
        return host.conn.run(FINGERPRINT, raise_on_error=False).stdout

    @pytest.mark.topology(SYSV)
    def test_0_set_up_the_states(server):
        server.host.conn.run(SETUP)
        server.host.conn.run(f"chattr +i {D}/immutable.conf")
        BEFORE["fp"] = fingerprint(server.host)

    @pytest.mark.topology(SYSV)
    def test_1_change_each_path(server):
        run = server.host.ansible.run
        assert run("ansible.builtin.copy", dest=f"{D}/acl.conf", content="changed\\\\n").changed
        assert run("ansible.builtin.copy", dest=f"{D}/xattr.conf", content="changed\\\\n").changed
        with pytest.raises(ModuleError):
            run("ansible.builtin.copy", dest=f"{D}/immutable.conf", content="changed\\\\n")
        assert run("ansible.builtin.copy", dest=f"{D}/a.conf", content="changed\\\\n").changed
        assert run("ansible.builtin.file", path=f"{D}/sparse.img", mode="0600").changed
        assert run("ansible.builtin.file", path=f"{D}/fifo", state="absent").changed
        assert run("ansible.builtin.file", path=f"{D}/null", state="absent").changed
        assert run("ansible.builtin.file", path=f"{D}/app.sock", state="absent").changed
        assert run("ansible.builtin.file", path=f"{D}/link.conf", state="absent").changed
        assert run("ansible.builtin.lineinfile", path=f"{D}/target.conf", line="more").changed
        assert run("ansible.builtin.file", path=f"{D}/suid.bin", mode="0755").changed
        assert run("ansible.builtin.file", path=f"{D}/sgid.bin", group="root").changed
        assert run("ansible.builtin.copy", dest=f"{D}/cap.bin", src="/bin/false", remote_src=True).changed
        assert run("ansible.builtin.lineinfile", path=f"{D}/noname.conf", line="more").changed
        assert run("ansible.builtin.file", path=f"{D}/new/deep/dir", state="directory").changed
        assert run("ansible.builtin.lineinfile", path=f"{D}/made/by/lineinfile.conf", line="x", create=True).changed

    @pytest.mark.topology(SYSV)
    def test_2_every_path_is_as_before(server):
        now = fingerprint(server.host)
        diff = list(difflib.unified_diff(BEFORE["fp"].splitlines(), now.splitlines(), lineterm="", n=0))
        assert not diff, "\\\\n".join(diff)

    @pytest.mark.topology(SYSV)
    def test_3_clean_up(server):
        server.host.conn.run(f"chattr -i {D}/immutable.conf; rm -rf {D}")
''')


def test_files__pre_existing_in_unusual_states__restored_exactly_or_reported(
    pytester: pytest.Pytester, states_lab: Lab
) -> None:
    pytester.makepyfile(test_states=SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--mh-inventory={states_lab.inventory_path}", "-v", "-rA"
    )
    result.assert_outcomes(passed=4)
