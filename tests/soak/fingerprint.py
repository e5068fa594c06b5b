"""An independent fingerprint of a lab host, taken with the ``ssh`` program (not through pytest-mh-ansible).

The soak compares each host's fingerprint at the start and at the end. It reads the host the way an
administrator would, over plain ssh with the lab's key and the inventory's address, so that a bug in
the product's own state probes (``mh_ansible.rollback.host_state``) cannot hide a change.

What it covers, as ``section: line`` entries:

- ``etc``: every path under /etc with its type, mode, owner, group and link target, and every regular
  file's SHA-256;
- ``accounts``: passwd, group, shadow, gshadow, subuid and subgid, line by line;
- ``home``: every path under /home with type, mode, owner and group;
- ``services``: each sysv script's status (``service --status-all``), or each systemd service
  unit's load/active/sub state and each unit file's enablement;
- ``sysctl``: the values of the keys the soak changes;
- ``firewall``: ``nft list ruleset`` and ``iptables-save`` (without its timestamp comments);
- ``tc``: every qdisc and filter of every interface;
- ``packages``: every package's dpkg status.

Left out, because they change without any test changing them:

- ``/etc/.pwd.lock``: created by the first ``useradd``/``groupadd`` and never removed (shadow's lock file);
- ``/etc/passwd-``, ``/etc/group-``, ``/etc/shadow-``, ``/etc/gshadow-``, ``/etc/subuid-``, ``/etc/subgid-``:
  the previous version that the shadow tools keep on every write; the files themselves are compared;
- ``/etc/ld.so.cache``: rewritten by a package's ldconfig trigger (a package install and its removal);
- systemd's per-login units (``user@0.service``, ``user-runtime-dir@0.service``): they start with an ssh
  login and stop some seconds after the last one ends, so they depend on the timing, not on a test.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from .plan import SYSCTL_KEYS

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


def _script(init: str) -> str:
    prune = " -o ".join(f"-path {path}" for path in ETC_EXCLUDED)
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
echo '## accounts'
for f in passwd group shadow gshadow subuid subgid; do sed "s|^|$f |" /etc/$f 2>/dev/null; done
echo '## home'
find /home -xdev -printf '%p %y %m %u %g %l\\n' | sort
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


def difference(before: list[str], after: list[str], limit: int = 40) -> list[str]:
    """What differs between two fingerprints: ``- entry`` (gone) and ``+ entry`` (new), at most ``limit``."""
    old, new = set(before), set(after)
    lines = [f"- {entry}" for entry in before if entry not in new] + [
        f"+ {entry}" for entry in after if entry not in old
    ]
    if len(lines) > limit:
        return [*lines[:limit], f"... and {len(lines) - limit} more"]
    return lines
