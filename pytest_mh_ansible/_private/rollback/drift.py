"""The drift check (``--mh-verify-rollback``): a host's fingerprint before a test and after its rollback.

The fingerprint comes from ``mh_ansible.rollback.host_state``: the paths of ``mh_verify_paths``
(content, mode, owner, link target), the account files (:data:`ACCOUNT_FILES`, by content, whatever
the paths), users, groups, service states and installed packages. Any
difference after the rollback is drift that the journal did not undo, such as a change made with a
raw command.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .inverses import SNAPSHOT_DIR

if TYPE_CHECKING:
    from ...host import MultihostHost

log = logging.getLogger("pytest_mh_ansible.rollback")

__all__ = ["ACCOUNT_FILES", "DEFAULT_EXCLUDE", "DEFAULT_PATHS", "differences", "fingerprint", "verify_paths"]

DEFAULT_PATHS = ("/etc", "/home", "/root", "/var/lib")
# Always fingerprinted by content: a raw useradd, groupadd or passwd changes them and nothing else may show it
# (the users and groups sections hold names and ids, not passwords or subordinate id ranges).
ACCOUNT_FILES = ("/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow", "/etc/subuid", "/etc/subgid")
# What changes on its own, or is the journal's own bookkeeping.
DEFAULT_EXCLUDE = (
    f"{SNAPSHOT_DIR}*",
    "/var/lib/mh-ansible*",
    "/var/lib/systemd/*",
    "/var/lib/dpkg/*-old",
    "/var/lib/dpkg/triggers/*",
    "/var/lib/apt/*",
    "/var/lib/dhcp/*",
    "/var/lib/logrotate/*",
    "/var/lib/sudo/*",
    "/var/lib/private/*",
    "/etc/ld.so.cache",
    "/root/.ansible*",  # Ansible's remote tmp, made by the first module call on a host
    "/var/lib/dpkg/status",  # rewritten by every dpkg run; the packages section compares the package list
    # shadow-utils' own backup copies, rewritten by every useradd/userdel (the real files are checked)
    "/etc/passwd-",
    "/etc/group-",
    "/etc/shadow-",
    "/etc/gshadow-",
    "/etc/subuid-",
    "/etc/subgid-",
)
_MAX_SHOWN = 20


def verify_paths(host: MultihostHost, ini_paths: Sequence[str]) -> list[str]:
    """The paths to check on ``host``: its ``mh_verify_paths`` variable, else the ini's, else the defaults."""
    value = host.vars.get("mh_verify_paths")
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple) and value:
        return [str(v) for v in value]
    return list(ini_paths) or list(DEFAULT_PATHS)


def fingerprint(
    host: MultihostHost, paths: Sequence[str], exclude: Sequence[str], cache: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The host's state now (read only; never recorded in the journal).

    :param cache: A dict that the caller keeps for this host from one fingerprint to the next. It holds
        the host's systemd unit-file states and a signature of its unit directories: the next
        fingerprint reads them again only when a unit file changed (``systemctl list-unit-files``
        reads them all: 0.9 s of a 2.2 s fingerprint on a lab host).
    """
    covered = [p.rstrip("/") or "/" for p in paths]
    extra = [f for f in ACCOUNT_FILES if not any(f == p or f.startswith(p.rstrip("/") + "/") for p in covered)]
    known = (cache or {}).get("unit_files")
    result = host.ansible.run(
        "mh_ansible.rollback.host_state",
        paths=[*paths, *extra],
        exclude=list(exclude),
        users=True,
        packages=True,
        services=True,
        **({"unit_files": known} if known else {}),
    )
    if cache is not None:
        unit_files = result.raw.get("unit_files")
        if isinstance(unit_files, Mapping):
            cache["unit_files"] = dict(unit_files)
        else:
            cache.pop("unit_files", None)
        if result.raw.get("unit_files_reused"):
            log.debug("%s: fingerprint: unit-file states reused (no unit directory changed)", host.name)
    state = result.raw.get("state", {})
    return dict(state) if isinstance(state, Mapping) else {}


def differences(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What differs between two fingerprints, one line per item (``/etc/motd: content changed``)."""
    lines: list[str] = []
    for section in ("paths", "users", "groups", "packages", "services"):
        old = before.get(section) or {}
        new = after.get(section) or {}
        for key in sorted(set(old) | set(new)):
            a, b = old.get(key), new.get(key)
            if a == b:
                continue
            lines.append(_describe(section, key, a, b))
    if len(lines) > _MAX_SHOWN:
        lines = [*lines[:_MAX_SHOWN], f"... and {len(lines) - _MAX_SHOWN} more"]
    return lines


def _describe(section: str, key: str, a: Any, b: Any) -> str:
    what = {"paths": "", "users": "user ", "groups": "group ", "packages": "package ", "services": "service "}[section]
    if a is None or (isinstance(a, Mapping) and a.get("type") == "absent"):
        return f"{what}{key}: created"
    if b is None or (isinstance(b, Mapping) and b.get("type") == "absent"):
        return f"{what}{key}: removed"
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        changed = [
            f"{field} {a.get(field)!r} -> {b.get(field)!r}" if field not in ("sha256", "size") else "content changed"
            for field in sorted(set(a) | set(b))
            if a.get(field) != b.get(field) and field != "size"
        ]
        return f"{what}{key}: {', '.join(changed) or 'changed'}"
    return f"{what}{key}: {a!r} -> {b!r}"
