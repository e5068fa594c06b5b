"""Users and groups that were there before a test, in unusual states, survive its changes and their rollback.

Each pre-existing account is changed by the module a test would use on it; after the rollback the
host's account files, the homes and mail spools are byte for byte as before. What cannot be
restored exactly is reported "not reverted" with the reason — and nothing that existed is deleted.
The first case is the one reported in #32: a user without a shadow entry was deleted, with its
home, by the rollback of a ``comment`` change.
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

    # What a rollback must leave as it found: the account files (the NSS ones too), every home and
    # mail spool with their files' content, modes and owners.
    FINGERPRINT = (
        "for f in /etc/passwd /etc/shadow /etc/group /etc/gshadow /var/lib/extrausers/*; do "
        "sed \\"s|^|$f: |\\" $f; done 2>&1; "
        "find /home /srv /var/mail -printf '%p %m %u %g %s %l\\\\n' 2>&1 | sort; "
        "find /home /srv /var/mail -type f -exec md5sum {} + 2>&1 | sort"
    )
    BEFORE = {}

    SETUP = """
    set -e
    # the #32 case: a user with a home and data, and no shadow entry
    useradd -m -c original legacy; echo keep > /home/legacy/data.txt; sed -i '/^legacy:/d' /etc/shadow
    # locked, expired, without a password
    useradd -m locked; echo 'locked:Secret-1' | chpasswd; usermod -L locked
    useradd -m expired; chage -E 0 -M 30 -W 5 expired
    useradd -m nopw; passwd -d nopw >/dev/null
    # a home outside /home, and a home that is missing
    mkdir -p /srv; useradd -m -d /srv/outside outside; echo keep > /srv/outside/f
    useradd -d /home/gone nohome
    # a user to be deleted with its home by the test (home and mail spool come back from a snapshot)
    useradd -m victim; echo precious > /home/victim/notes; echo mail > /var/mail/victim; chown victim /var/mail/victim
    # what a user the test creates must not take along: its future home and a group of its name
    mkdir -p /home/newbie; echo mine > /home/newbie/old.txt
    groupadd -g 4242 newbie; usermod -a -G newbie locked
    # groups: no gshadow entry; a user's primary group; members listed in both files
    groupadd noshadow; sed -i '/^noshadow:/d' /etc/gshadow
    groupadd both; gpasswd -M locked,expired both >/dev/null
    # an account served by NSS only (extrausers), not in the local files
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q libnss-extrausers >/dev/null
    mkdir -p /var/lib/extrausers
    echo 'nssuser:x:7001:7001:From NSS:/home/nssuser:/bin/sh' > /var/lib/extrausers/passwd
    echo 'nssgroup:x:7001:' > /var/lib/extrausers/group
    touch /var/lib/extrausers/shadow
    sed -i 's/^passwd:.*/passwd: files extrausers/; s/^group:.*/group: files extrausers/' /etc/nsswitch.conf
    getent passwd nssuser >/dev/null
    """

    def fingerprint(host):
        return host.conn.run(FINGERPRINT, raise_on_error=False).stdout

    @pytest.mark.topology(SYSV)
    def test_0_set_up_the_states(server):
        server.host.conn.run(SETUP)
        BEFORE["fp"] = fingerprint(server.host)

    @pytest.mark.topology(SYSV)
    def test_1_change_each_account(server):
        run = server.host.ansible.run
        assert run("ansible.builtin.user", name="legacy", comment="changed by a test").changed
        assert run("ansible.builtin.user", name="locked", shell="/bin/sh", password_lock=False).changed
        assert run("ansible.builtin.user", name="expired", expires=-1, comment="x").changed
        assert run("ansible.builtin.user", name="nopw", groups=["both"], append=True).changed
        assert run("ansible.builtin.user", name="outside", comment="moved", shell="/bin/false").changed
        assert run("ansible.builtin.user", name="nohome", comment="still none").changed
        assert run("ansible.builtin.user", name="victim", state="absent", remove=True).changed
        assert run("ansible.builtin.user", name="newbie", group="newbie").changed
        assert run("ansible.builtin.group", name="noshadow", gid=4343).changed
        assert run("ansible.builtin.group", name="both", gid=4444).changed
        assert run("ansible.builtin.group", name="brandnew").changed
        # A module that fails half-way: the user, its group and home are made, then the key type is refused.
        with pytest.raises(ModuleError):
            run("ansible.builtin.user", name="halfway", generate_ssh_key=True, ssh_key_type="bogus")
        assert server.host.conn.run("getent passwd halfway", raise_on_error=False).rc == 0
        # A user that exists only through NSS: the module may fail on it; nothing may be deleted.
        try:
            run("ansible.builtin.user", name="nssuser", comment="local now?")
        except ModuleError:
            pass
        assert server.host.conn.run("test -e /home/victim", raise_on_error=False).rc == 1

    @pytest.mark.topology(SYSV)
    def test_2_every_account_is_as_before(server):
        now = fingerprint(server.host)
        diff = list(difflib.unified_diff(BEFORE["fp"].splitlines(), now.splitlines(), lineterm="", n=0))
        assert not diff, "\\n".join(diff)
        assert server.host.conn.run("cat /home/legacy/data.txt").stdout == "keep\\n"
        assert server.host.conn.run("cat /home/newbie/old.txt").stdout == "mine\\n"
        assert server.host.conn.run("getent passwd nssuser").stdout.startswith("nssuser:x:7001:")
''')


def test_accounts__pre_existing_in_unusual_states__restored_byte_for_byte_or_reported(
    pytester: pytest.Pytester, states_lab: Lab
) -> None:
    pytester.makepyfile(test_states=SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--mh-inventory={states_lab.inventory_path}", "-v", "-rA"
    )
    text = result.stdout.str()
    result.assert_outcomes(passed=3)
    # the #32 case: reverted by putting the old entry back, never by deleting the account
    assert "userdel" not in text or "legacy" not in text.split("userdel", 1)[1].split("\n", 1)[0]
    # nothing was said to be reverted that was not: the NSS-only user is reported, never touched
    assert "] reverted: ansible.builtin.user name=nssuser" not in text
    assert "user 'nssuser' exists through NSS only (not in /etc/passwd)" in text
    # the half-failed call was undone (the fingerprint above has no 'halfway'), and said so
    assert "[server1] reverted: ansible.builtin.user name=halfway (failed: undone in case it changed" in text
