"""An independent fingerprint of a lab host, taken with the ``ssh`` program (not through pytest-mh-ansible).

The soak compares each host's fingerprint at the start and at the end. It reads the host the way an
administrator would, over plain ssh with the lab's key and the inventory's address, so that a bug in
the product's own state probes (``mh_ansible.rollback.host_state``) cannot hide a change.

What it covers, as ``section: line`` entries:

- ``etc``: every path under /etc with its type, mode, owner, group and link target, and every regular
  file's SHA-256;
- ``paths``: the same for /tmp, /root, /srv, /var/lib and /var/spool (with the link count of every path
  that is not a directory), without the excluded paths below; /var/lib includes
  /var/lib/mh-ansible, the tool's snapshots and on-host journals (``traces()`` checks them apart);
- ``acl``: every extended ACL under /etc, /home, /root, /srv, /tmp, /var/lib and /var/spool
  (``getfacl -R -s``: files with only the base ACL are not listed, the mode covers those);
- ``xattr``: every extended attribute (``user.*``, ``security.*`` such as file capabilities, ``trusted.*``)
  under the same trees;
- ``states``: what the objects of ``states.py`` have beyond that: whether the two hard links are still
  one inode, the immutable attribute, the file capability, the held packages, and on systemd whether a
  state unit waits for a daemon-reload;
- ``accounts``: passwd, group, shadow, gshadow, subuid and subgid, line by line;
- ``home``: every path under /home with type, mode, owner and group, and every file's SHA-256;
- ``services``: each sysv script's status (``service --status-all``), or each systemd service
  unit's load/active/sub state and each unit file's enablement;
- ``sysctl``: the values of the keys the soak changes;
- ``firewall``: ``nft list ruleset`` and ``iptables-save`` (without its timestamp comments);
- ``tc``: every qdisc and filter of every interface;
- ``packages``: every package's dpkg status (the hold is its first letter).

Left out, because they change without any test changing them (each seen in a soak run, see docs/soak.md):

- ``/etc/.pwd.lock``: created by the first ``useradd``/``groupadd`` and never removed (shadow's lock file);
- ``/etc/passwd-``, ``/etc/group-``, ``/etc/shadow-``, ``/etc/gshadow-``, ``/etc/subuid-``, ``/etc/subgid-``:
  the previous version that the shadow tools keep on every write; the files themselves are compared;
- ``/etc/ld.so.cache``: rewritten by a package's ldconfig trigger (a package install and its removal);
- systemd's per-login units (``user@0.service``, ``user-runtime-dir@0.service``): they start with an ssh
  login and stop some seconds after the last one ends, so they depend on the timing, not on a test;
- under /var/lib and /tmp, those of ``PATHS_EXCLUDED``, each with its reason.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .plan import SYSCTL_KEYS
from .states import FINGERPRINT_SYSTEMD, FINGERPRINT_SYSV

ETC_EXCLUDED = (
    "/etc/.pwd.lock",
    "/etc/passwd-",
    "/etc/group-",
    "/etc/shadow-",
    "/etc/gshadow-",
    "/etc/subuid-",
    "/etc/subgid-",
    "/etc/ld.so.cache",
)
SERVICE_EXCLUDED = ("user@", "user-runtime-dir@")
# The other trees of the ``paths`` section, and what in them changes by itself.
PATHS: Final = ("/tmp", "/root", "/srv", "/var/lib", "/var/spool")
PATHS_EXCLUDED: Final = (
    # the machine's package lists, which a lab host sees through its overlay: an `apt-get update` on the
    # machine (lab up runs one when a package is unknown) changes them, no test on a host does
    "/var/lib/apt/lists",
    # dpkg's copy of its previous status database, written on every dpkg run: after a package's install
    # and removal it holds an intermediate state (seen on sysd1); the database itself is compared
    "/var/lib/dpkg/status-old",
)
# Where the tool keeps what it needs on a host: empty or absent when a run has ended (docs/soak.md).
SNAPSHOTS: Final = "/var/lib/mh-ansible/snapshots"
JOURNAL: Final = "/var/lib/mh-ansible/journal"
LEASES: Final = "/tmp/pytest-mh-ansible-leases"


def _script(init: str) -> str:
    prune = " -o ".join(f"-path {path}" for path in ETC_EXCLUDED)
    paths, paths_prune = " ".join(PATHS), " -o ".join(f"-path {path}" for path in PATHS_EXCLUDED)
    acl_trees = f"/etc /home {paths}"
    if init == "systemd":
        services = (
            "systemctl list-units --type=service --all --plain --no-legend --no-pager | awk '{print $1, $2, $3, $4}'; "
            "systemctl list-unit-files --type=service --plain --no-legend --no-pager | awk '{print $1, $2}'"
        )
    else:
        services = "service --status-all 2>&1"
    excluded_units = "|".join(SERVICE_EXCLUDED)
    sysctl = " ".join(SYSCTL_KEYS)
    return f"""
set -u
LC_ALL=C; export LC_ALL
echo '## etc'
find /etc -xdev \\( {prune} \\) -prune -o -printf '%p %y %m %u %g %l\\n' | sort
find /etc -xdev \\( {prune} \\) -prune -o -type f -print0 | sort -z | xargs -0 sha256sum
echo '## paths'
find {paths} -xdev \\( {paths_prune} \\) -prune -o -type d -printf '%p %y %m %u %g\\n' \\
  -o -printf '%p %y %m %u %g %n %l\\n' 2>&1 | sort
find {paths} -xdev \\( {paths_prune} \\) -prune -o -type f -print0 | sort -z | xargs -0 -r sha256sum 2>&1
echo '## acl'
getfacl -R -s -p -n {acl_trees} 2>&1 | grep -v '^$'
echo '## xattr'
getfattr --absolute-names -R -h -d -m - {acl_trees} 2>&1 | grep -v '^$'
echo '## states'
{FINGERPRINT_SYSTEMD if init == "systemd" else FINGERPRINT_SYSV}
echo '## accounts'
for f in passwd group shadow gshadow subuid subgid; do sed "s|^|$f |" /etc/$f 2>/dev/null; done
echo '## home'
find /home -xdev -printf '%p %y %m %u %g %l\\n' | sort
find /home -xdev -type f -print0 | sort -z | xargs -0 -r sha256sum
echo '## services'
{{ {services}; }} | grep -E -v '^({excluded_units})' | sort
echo '## sysctl'
for k in {sysctl}; do echo "$k $(sysctl -n $k)"; done
echo '## firewall'
nft list ruleset 2>/dev/null
iptables-save 2>/dev/null | grep -v '^#'
echo '## tc'
for dev in $(ls /sys/class/net); do tc qdisc show dev $dev; tc filter show dev $dev; done
echo '## packages'
dpkg-query -W -f '${{Package}} ${{Version}} ${{db:Status-Abbrev}}\\n' | sort
echo '## end'
"""


@dataclass(frozen=True)
class SshTarget:
    """How to reach one lab host with plain ssh: its address, the lab's key and known_hosts."""

    name: str
    address: str
    key: Path
    known_hosts: Path
    init: str

    def ssh(self, command: str, *, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        argv = [
            "ssh",
            "-i",
            str(self.key),
            "-o",
            f"UserKnownHostsFile={self.known_hosts}",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            "-o",
            "ControlMaster=no",
            "-o",
            "ControlPath=none",
            f"root@{self.address}",
            command,
        ]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def fingerprint(target: SshTarget) -> list[str]:
    """The host's fingerprint as sorted ``section: line`` entries.

    :raises RuntimeError: ssh failed, or the script did not get to its end.
    """
    result = target.ssh(_script(target.init))
    if "## end" not in result.stdout:
        raise RuntimeError(f"fingerprint of {target.name}: ssh rc {result.returncode}: {result.stderr.strip()[:500]}")
    entries, section = [], ""
    for line in result.stdout.splitlines():
        if line.startswith("## "):
            section = line[3:]
        elif line.strip():
            entries.append(f"{section}: {line.rstrip()}")
    return entries


# The trees of ``paths`` that a lab host sees through its overlay, over the machine's own (/tmp is a tmpfs of
# the host's, /root an empty directory of its own).
MACHINE_PATHS: Final = ("/srv", "/var/lib", "/var/spool")


def machine_paths() -> list[str]:
    """The machine's own ``paths`` entries below the hosts' overlays (run on the machine, not on a host).

    A file that the machine changes under /var/lib while the soak runs (another process installs a
    package, writes a cache) shows through in every host that never wrote that file itself: that is no
    change of a test, and ``shown_through()`` sets it apart, by path, instead of calling it a host's.
    """
    prune = " -o ".join(f"-path {path}" for path in PATHS_EXCLUDED)
    roots = " ".join(MACHINE_PATHS)
    script = (
        f"LC_ALL=C find {roots} -xdev \\( {prune} \\) -prune -o -type d -printf '%p %y %m %u %g\\n' "
        f"-o -printf '%p %y %m %u %g %n %l\\n' 2>/dev/null | LC_ALL=C sort; "
        f"LC_ALL=C find {roots} -xdev \\( {prune} \\) -prune -o -type f -print0 2>/dev/null "
        "| LC_ALL=C sort -z | xargs -0 -r sha256sum 2>/dev/null"
    )
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=False)
    return [f"paths: {line}" for line in done.stdout.splitlines() if line.strip()]


def entry_path(entry: str) -> str:
    """The path an entry of the ``paths`` section is about (a listing line or a ``sha256sum`` line)."""
    body = entry.removeprefix("paths: ")
    if "  /" in body:  # "<sha256>  /path"
        return body.split("  ", 1)[1]
    return body.split(" ", 1)[0]


def shown_through(diff: list[str], machine_before: list[str], machine_after: list[str]) -> tuple[list[str], list[str]]:
    """Split a host's ``difference()`` into the host's own lines and those of paths the machine changed too."""
    changed = {entry_path(e) for e in set(machine_before) ^ set(machine_after)}
    own: list[str] = []
    machine: list[str] = []
    for line in diff:
        entry = line[2:]
        (machine if entry.startswith("paths: ") and entry_path(entry) in changed else own).append(line)
    return own, machine


def difference(before: list[str], after: list[str], limit: int = 40) -> list[str]:
    """What differs between two fingerprints: ``- entry`` (gone) and ``+ entry`` (new), at most ``limit``."""
    old, new = set(before), set(after)
    lines = [f"- {entry}" for entry in before if entry not in new] + [
        f"+ {entry}" for entry in after if entry not in old
    ]
    if len(lines) > limit:
        return [*lines[:limit], f"... and {len(lines) - limit} more"]
    return lines


def traces(entries: list[str]) -> list[str]:
    """The entries of the tool's own files on a host: snapshots (an empty directory is allowed), journals, leases.

    The end of a soak must have none: a snapshot or a journal left behind is a change that a run kept, and a
    lease is a run that did not let go of its host (#32 items 5 and 6).
    """
    found = []
    for entry in entries:
        if not entry.startswith("paths: /"):
            continue
        path = entry.split()[1]
        if path.startswith(SNAPSHOTS + "/") or any(
            path == root or path.startswith(root + "/") for root in (JOURNAL, LEASES)
        ):
            found.append(entry)
    return found
