"""Objects in unusual states that each soak host has before its first test, and the changes made to them.

The states are those of #32's state suite (``tests/integration/rollback_states/``): accounts without a
shadow entry or locked, a group without a gshadow entry, files with an ACL, an extended attribute, a
hard link, a FIFO, a symlink, setuid and a file capability, an owner without a name, an immutable file,
a held package, and services in states of their init system (a masked, a static and a running unit with
a drop-in on systemd; a sysv service disabled by ``K`` links only). The driver makes them over plain
ssh before the first fingerprint (``prepare_script``), outside any journal, as a host would have them.
The generated tests then change them with raw module calls and the bundled utilities
(``suite_conftest.apply_state``), and the fingerprint must come back equal after every rollback.

Left out on purpose: a failed unit and a unit enabled at runtime only. The journal cannot put them back
exactly (a unit cannot be made "failed" again, ``systemctl enable --runtime`` becomes a plain
enablement) and reports them "not reverted", which the state suite checks; in the soak every such
change would be a reported rollback failure and a fingerprint difference, by design.
"""

from __future__ import annotations

from typing import Final

# Where the files in unusual states live on each host (fingerprinted with their ACLs, xattrs, attributes).
STATE_DIR: Final = "/srv/mhsoak"
# The packages the states need from the lab's cache: acl and attr (setfacl/getfacl, setfattr/getfattr),
# cowsay (the held package).
STATE_PACKAGES: Final = ("acl", "attr", "cowsay")
HELD_PACKAGE: Final = "cowsay"
SYSTEMD_UNITS: Final = ("mhsoak-masked", "mhsoak-static", "mhsoak-drop")
DROP_IN: Final = "/etc/systemd/system/mhsoak-drop.service.d/override.conf"
SYSV_SERVICE: Final = "mhsoak-k"  # K links in every runlevel: disabled by update-rc.d, not merely absent

# The change kinds on these objects (plan.CHANGES includes them).
STATE_CHANGES: Final = (
    "state.user_noshadow",  # the #32 case: ansible.builtin.user comment= on a user without a shadow entry
    "state.user_locked",  # a locked user (!) unlocked, its shell changed
    "state.group_noshadow",  # a group without a gshadow entry gets another gid
    "state.file_acl",  # a file with an ACL rewritten
    "state.file_xattr",  # a file with a user.* xattr rewritten
    "state.hardlink",  # one of two hard links rewritten: the other keeps its inode and content
    "state.fifo",  # a FIFO removed
    "state.symlink",  # a symlink removed, its target appended to
    "state.setuid_caps",  # a setuid binary's mode, a binary with a file capability replaced
    "state.noname_owner",  # a file owned by a uid without a name appended to
    "state.immutable",  # a write to an immutable file (chattr +i): the module fails, the file stays
    "state.sysctl_missing",  # a read-only kernel key and one that does not exist: the module fails
    "state.service",  # systemd: unmask, start a static unit, a drop-in changed; sysv: enable a K-only service
    "state.held_pkg",  # a held package removed (allow_change_held_packages)
)

_COMMON = f"""
set -e
cd /var/cache/apt/archives
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-download {" ".join(STATE_PACKAGES)} >/dev/null
apt-mark hold {HELD_PACKAGE} >/dev/null
useradd -m -c original mhslegacy; echo keep > /home/mhslegacy/data.txt; sed -i '/^mhslegacy:/d' /etc/shadow
useradd -m mhslocked; echo 'mhslocked:Secret-1' | chpasswd; usermod -L mhslocked
groupadd mhsnoshadow; sed -i '/^mhsnoshadow:/d' /etc/gshadow
mkdir -p {STATE_DIR}; cd {STATE_DIR}
echo acl > acl.conf; setfacl -m u:nobody:r,g:adm:rw acl.conf
echo xattr > xattr.conf; setfattr -n user.mh -v kept xattr.conf
echo linked > a.conf; ln a.conf b.conf
mkfifo fifo
echo target > target.conf; ln -s target.conf link.conf
cp /bin/true suid.bin; chmod 4755 suid.bin
cp /bin/true cap.bin; setcap cap_net_raw+ep cap.bin
echo nobody-owns > noname.conf; chown 4321:4321 noname.conf
echo locked > immutable.conf; chattr +i immutable.conf
"""

_SYSTEMD = """
cd /lib/systemd/system
for u in mhsoak-masked mhsoak-static mhsoak-drop; do
  printf '[Service]\\nExecStart=/bin/sleep infinity\\n' > $u.service
done
for u in mhsoak-masked mhsoak-drop; do printf '[Install]\\nWantedBy=multi-user.target\\n' >> $u.service; done
mkdir -p /etc/systemd/system/mhsoak-drop.service.d
printf '[Service]\\nEnvironment=MH=1\\n' > /etc/systemd/system/mhsoak-drop.service.d/override.conf
systemctl daemon-reload
systemctl mask mhsoak-masked 2>/dev/null
systemctl start mhsoak-drop
"""

_SYSV = """
cat > /etc/init.d/mhsoak-k <<'EOF'
{script}EOF
chmod 0755 /etc/init.d/mhsoak-k
update-rc.d mhsoak-k defaults >/dev/null
update-rc.d mhsoak-k disable >/dev/null
ls /etc/rc2.d | grep -q '^K..mhsoak-k$'
"""

# What the fingerprint reads of the states beyond its paths, ACLs and xattrs: that the two hard links are
# one inode, the immutable attribute, the capability, the held packages, and on systemd whether a unit
# waits for a daemon-reload (a drop-in restored without one would).
FINGERPRINT_SYSV = f"""
cd {STATE_DIR} && echo "hard links: $(stat -c %i a.conf b.conf | uniq | wc -l) inode(s)"
lsattr -d {STATE_DIR}/immutable.conf 2>&1 | cut -d' ' -f1
getcap {STATE_DIR}/cap.bin 2>&1
echo "held: $(apt-mark showhold | tr '\\n' ' ')"
"""
FINGERPRINT_SYSTEMD = FINGERPRINT_SYSV + "".join(
    f"echo '{unit}' need-reload $(systemctl show -p NeedDaemonReload --value {unit})\n" for unit in SYSTEMD_UNITS
)


def prepare_script(init: str, sysv_script: str) -> str:
    """The shell script that puts a host's objects into their states (``sysv_script``: the K-only service)."""
    return _COMMON + (_SYSTEMD if init == "systemd" else _SYSV.format(script=sysv_script))
