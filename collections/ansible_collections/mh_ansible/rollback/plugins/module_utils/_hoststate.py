"""Host facts for drift checks: users and groups, installed packages, services (systemd or SysV init).

Runs on the managed host: standard library only, Python 3.8 syntax. Commands go through a ``run``
callable ``run(argv) -> (rc, stdout, stderr)`` (``AnsibleModule.run_command`` fits) so tests can fake them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import stat
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, List, Sequence, Tuple

Run = Callable[[List[str]], Tuple[int, str, str]]

#: Seconds one SysV ``status`` call may take before it counts as ``timeout``.
SYSV_TIMEOUT = 5.0
_SYSV_SKIP = {"README", "skeleton", "rc", "rcS", "functions", "halt", "reboot", "single", "killprocs"}
_SCOPES = (".scope", ".scope.d")
_RC_LINK = re.compile(r"^S\d\d(?P<name>.+)$")


def read_users(passwd: str = "/etc/passwd") -> dict[str, dict[str, Any]]:
    """Parse passwd(5) into ``name -> {uid, gid, home, shell}``; malformed lines are skipped."""
    users: dict[str, dict[str, Any]] = {}
    for fields in _colon_lines(passwd, 7):
        try:
            users[fields[0]] = {"uid": int(fields[2]), "gid": int(fields[3]), "home": fields[5], "shell": fields[6]}
        except ValueError:
            continue
    return users


def read_groups(group: str = "/etc/group") -> dict[str, dict[str, Any]]:
    """Parse group(5) into ``name -> {gid, members}`` with members sorted."""
    groups: dict[str, dict[str, Any]] = {}
    for fields in _colon_lines(group, 4):
        try:
            gid = int(fields[2])
        except ValueError:
            continue
        groups[fields[0]] = {"gid": gid, "members": sorted(m for m in fields[3].split(",") if m)}
    return groups


def _colon_lines(path: str, count: int) -> list[list[str]]:
    with open(path, encoding="utf-8", errors="replace") as handle:
        lines = handle.read().splitlines()
    return [
        fields
        for fields in (line.split(":") for line in lines if line and not line.startswith("#"))
        if len(fields) >= count
    ]


def read_packages(run: Run, which: Callable[[str], str | None]) -> tuple[dict[str, str], str | None]:
    """Installed packages as ``name -> version`` from dpkg or rpm; returns (packages, warning)."""
    if which("dpkg-query"):
        rc, out, err = run(["dpkg-query", "-W", "-f", "${Package} ${Version} ${Status}\\n"])
        if rc != 0:
            return {}, f"dpkg-query failed (rc {rc}): {err.strip()}"
        return parse_dpkg(out), None
    if which("rpm"):
        rc, out, err = run(["rpm", "-qa", "--qf", "%{NAME} %{VERSION}-%{RELEASE}.%{ARCH}\\n"])
        if rc != 0:
            return {}, f"rpm -qa failed (rc {rc}): {err.strip()}"
        return parse_rpm(out), None
    return {}, "neither dpkg-query nor rpm found; packages are not fingerprinted"


def parse_dpkg(out: str) -> dict[str, str]:
    """``name version want ok status`` lines; packages not fully installed get their status appended."""
    packages: dict[str, str] = {}
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) < 2:
            continue
        status = parts[2] if len(parts) > 2 else ""
        packages[parts[0]] = parts[1] if status == "install ok installed" else f"{parts[1]} ({status})"
    return packages


def parse_rpm(out: str) -> dict[str, str]:
    """``name version-release.arch`` lines; several installed versions are joined with commas."""
    packages: dict[str, str] = {}
    for line in out.splitlines():
        parts = line.split(" ", 1)
        if len(parts) == 2:
            packages[parts[0]] = ",".join(sorted(filter(None, [packages.get(parts[0]), parts[1]])))
    return packages


def systemd_running(root: str = "/") -> bool:
    """True when systemd is PID 1 (the check systemd's own sd_booted() does)."""
    return os.path.isdir(os.path.join(root, "run/systemd/system"))


def read_systemd_services(
    run: Run, known: dict[str, Any] | None = None
) -> tuple[dict[str, dict[str, str]], str | None, dict[str, Any] | None]:
    """``unit -> {active, sub, enabled}`` from systemctl; returns (services, warning, unit files).

    The enablement comes from ``systemctl list-unit-files``, which reads every unit file of every unit
    directory (0.9 s for 110 services on a Debian 12 host). ``unit files`` is
    ``{"signature": ..., "enabled": {unit: state}}``: given back as ``known`` to the next call on this
    host, its states are used again when the unit directories have the same :func:`unit_files_signature`.
    None when no signature could be taken (then nothing is to be given back).
    """
    rc, out, err = run(["systemctl", "list-units", "--all", "--type=service", "--no-legend", "--plain", "--no-pager"])
    if rc != 0:
        return {}, f"systemctl list-units failed (rc {rc}): {err.strip()}", None
    services: dict[str, dict[str, str]] = {}
    for line in out.splitlines():
        parts = line.split(None, 4)
        if len(parts) >= 4:
            services[parts[0]] = {"active": parts[2], "sub": parts[3], "enabled": "unknown"}
    # The signature first: a unit file changed while list-unit-files runs makes the next signature differ.
    signature = None
    rc, out, _ = run(["systemctl", "show", "--property=UnitPath"])  # not --value: systemd 230+ only
    directories = [line[len("UnitPath=") :].split() for line in out.splitlines() if line.startswith("UnitPath=")]
    if rc == 0 and directories and directories[0]:
        signature = unit_files_signature(directories[0])
    if (
        signature is not None
        and known
        and known.get("signature") == signature
        and isinstance(known.get("enabled"), dict)
    ):
        enabled = {str(name): str(state) for name, state in known["enabled"].items()}
    else:
        rc, out, err = run(["systemctl", "list-unit-files", "--type=service", "--no-legend", "--plain", "--no-pager"])
        if rc != 0:
            return services, f"systemctl list-unit-files failed (rc {rc}): {err.strip()}", None
        enabled = {parts[0]: parts[1] for parts in (line.split() for line in out.splitlines()) if len(parts) >= 2}
    for name, state in enabled.items():
        entry = services.setdefault(name, {"active": "inactive", "sub": "dead", "enabled": "unknown"})
        entry["enabled"] = state
    unit_files = {"signature": signature, "enabled": enabled} if signature is not None else None
    return services, None, unit_files


def unit_files_signature(directories: Sequence[str], now: float | None = None) -> str | None:
    """A digest of everything in systemd's unit directories that a unit file's state can depend on.

    Every entry, recursively: its relative path, type, size, mode, owner, mtime and ctime; a symlink's target,
    and that target's size, mtime and ctime when it is a file (or that it is missing). Logins' scopes are
    left out: logind adds one for every ssh session. None when an entry changed in the last
    two seconds: a file rewritten twice within one timestamp tick would keep its signature, so a
    signature is only given for directories that have been still for longer (as git does with its index).
    """
    now = time.time() if now is None else now
    digest = hashlib.sha256()
    newest = 0
    for top in directories:
        digest.update(b"\0top\0" + top.encode("utf-8", "surrogateescape"))
        for line, changed in _signature_lines(top, ""):
            digest.update(line.encode("utf-8", "surrogateescape") + b"\n")
            newest = max(newest, changed)
    if newest / 1e9 > now - 2.0:
        return None
    return digest.hexdigest()


def _signature_lines(top: str, rel: str) -> Iterator[tuple[str, int]]:
    try:
        with os.scandir(os.path.join(top, rel) if rel else top) as entries:
            found = sorted(entries, key=lambda entry: entry.name)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return
    for entry in found:
        if entry.name.endswith(_SCOPES):
            continue  # a login's transient scope (logind makes one per ssh session): never a unit file's state
        path = rel + "/" + entry.name if rel else entry.name
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        line = f"{path} {st.st_mode:o} {st.st_size} {st.st_uid}:{st.st_gid} {st.st_mtime_ns} {st.st_ctime_ns}"
        changed = max(st.st_mtime_ns, st.st_ctime_ns)
        if stat.S_ISLNK(st.st_mode):
            try:
                line += " -> " + os.readlink(entry.path)
                target = os.stat(entry.path)
            except OSError:
                line += " (missing)"
            else:
                if stat.S_ISREG(target.st_mode):  # a unit file elsewhere; not /dev/null of a masked unit
                    line += f" ({target.st_size} {target.st_mtime_ns} {target.st_ctime_ns})"
                    changed = max(changed, target.st_mtime_ns, target.st_ctime_ns)
        yield line, changed
        if stat.S_ISDIR(st.st_mode):
            yield from _signature_lines(top, path)


def sysv_status(argv: list[str], timeout: float = SYSV_TIMEOUT) -> int | None:
    """Run a status command with a timeout, killing its whole process group; None when it timed out."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None


def read_sysv_services(
    init_d: str = "/etc/init.d",
    rc_d: str = "/etc/rc2.d",
    service: str | None = None,
    timeout: float = SYSV_TIMEOUT,
) -> dict[str, dict[str, str]]:
    """``script -> {active, sub, enabled}`` for SysV init scripts, their ``status`` calls run in parallel.

    ``active`` is ``active`` for rc 0, ``inactive`` for other codes and ``unknown`` on timeout; ``enabled``
    means an ``S??name`` link in ``rc_d``.
    """
    try:
        names = sorted(
            name
            for name in os.listdir(init_d)
            if name not in _SYSV_SKIP
            and not name.startswith(".")
            and os.access(os.path.join(init_d, name), os.X_OK)
            and os.path.isfile(os.path.join(init_d, name))
        )
    except FileNotFoundError:
        return {}
    try:
        links = os.listdir(rc_d)
    except FileNotFoundError:
        links = []
    enabled = {match.group("name") for match in map(_RC_LINK.match, links) if match}

    def status(name: str) -> int | None:
        argv = [service, name, "status"] if service else [os.path.join(init_d, name), "status"]
        return sysv_status(argv, timeout)

    with ThreadPoolExecutor(max_workers=max(1, min(16, len(names)))) as pool:
        codes = list(pool.map(status, names))
    services: dict[str, dict[str, str]] = {}
    for name, rc in zip(names, codes):
        if rc is None:
            active, sub = "unknown", "timeout"
        elif rc == 0:
            active, sub = "active", "running"
        else:
            active, sub = "inactive", "dead"
        services[name] = {"active": active, "sub": sub, "enabled": "enabled" if name in enabled else "disabled"}
    return services
