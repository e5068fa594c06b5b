"""Crash detection: core dumps (and denials) during a test."""

from __future__ import annotations

import math
import posixpath
import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..utility import MultihostUtility
from .logs import test_start

if TYPE_CHECKING:
    from ..host import MultihostHost

__all__ = ["Crash", "Crashes", "core_locations", "logged_before"]

COREDUMP_DIR = "/var/lib/systemd/coredump"
# Where cores land for a relative core_pattern (the crashing process's working directory).
RELATIVE_DIRS = ("/", "/root", "/tmp", "/var/tmp")
DENIED = shlex.quote('avc: +denied|apparmor="DENIED"')
AUDIT_STAMP = re.compile(r"audit\((\d+(?:\.\d+)?):\d+\)")
"""The time stamp of an audit record (``msg=audit(1733400000.123:4242)``), also in the kernel log."""


@dataclass(frozen=True)
class Crash:
    """One finding: a core dump or a denial."""

    host: str
    kind: str  # "core" or "denial"
    detail: str

    def __str__(self) -> str:
        return f"{self.host}: {self.kind}: {self.detail}"


def core_locations(pattern: str) -> tuple[str, list[str], str]:
    """Where cores go for ``kernel.core_pattern``: ``(mode, directories, name glob)``.

    ``mode`` is ``"coredumpctl"`` (systemd-coredump), ``"files"`` (a path pattern), or
    ``"unavailable"`` (a pipe to another handler: the cores are out of our sight); the glob is the
    pattern's basename up to its first ``%`` specifier.
    """
    pattern = pattern.strip()
    if pattern.startswith("|"):
        if "systemd-coredump" in pattern:
            return "coredumpctl", [COREDUMP_DIR], "core*"
        return "unavailable", [], pattern
    directory, name = posixpath.split(pattern or "core")
    glob = (name.split("%", 1)[0] or "core") + "*"
    dirs = [directory] if directory.startswith("/") else list(RELATIVE_DIRS)
    return "files", dirs, glob


class Crashes(MultihostUtility["MultihostHost"]):
    """Core dumps and SELinux/AppArmor denials on the host since the test started.

    The plugin calls :meth:`check` after each test on the test's hosts and, by the ini option
    ``mh_crashes = fail | warn | ignore`` (default ``ignore``, as the check costs commands on every host
    after every test), fails the test or reports the findings.
    Cores are found by ``kernel.core_pattern``: ``coredumpctl list --since`` for systemd-coredump,
    else new files (``find -newermt``) in the pattern's directory (for a relative pattern: ``/``,
    ``/root``, ``/tmp``, ``/var/tmp`` and ``search_dirs``). A pipe to another handler cannot be seen:
    :attr:`unavailable` says why. Denials come from ``ausearch -m AVC,USER_AVC`` where auditd runs,
    else from the kernel log (``journalctl -k``) where journald runs.

    Example::

        def test_no_crash(server):
            server.host.conn.run("app --selftest")
            assert not server.crashes.check()      # or rely on mh_crashes = fail
    """

    def __init__(self, host: MultihostHost) -> None:
        super().__init__(host)
        self.search_dirs: list[str] = []
        self.unavailable: str | None = None

    def check(self) -> list[Crash]:
        """Every core dump and denial since the test started (empty when none)."""
        since = self.host.logs.host_time(test_start())
        return self.cores(since) + self.denials(since)

    def cores(self, since: float) -> list[Crash]:
        """Core dumps newer than ``since`` (the host's epoch time)."""
        pattern = self.host.conn.run("cat /proc/sys/kernel/core_pattern").stdout
        mode, dirs, glob = core_locations(pattern)
        found: list[Crash] = []
        self.unavailable = None
        if mode == "unavailable":
            self.unavailable = f"core_pattern pipes cores to {glob!r}, which this utility cannot read"
            return found
        if mode == "coredumpctl":
            result = self.host.conn.run(
                f"coredumpctl list --no-legend --no-pager --since=@{since:.0f} 2>/dev/null", raise_on_error=False
            )
            found += [
                Crash(self.host.name, "core", line.strip()) for line in result.stdout.splitlines() if line.strip()
            ]
        dirs = list(dict.fromkeys([*dirs, *self.search_dirs]))
        quoted = " ".join(shlex.quote(d) for d in dirs)
        result = self.host.conn.run(
            f"find {quoted} -maxdepth 1 -type f -name {shlex.quote(glob)} -newermt @{since:.3f} 2>/dev/null",
            raise_on_error=False,
        )
        found += [Crash(self.host.name, "core", path) for path in parse_lines(result.stdout)]
        return found

    def denials(self, since: float) -> list[Crash]:
        """SELinux AVC and AppArmor denials newer than ``since``, where auditd or journald can tell.

        ``ausearch -ts`` takes whole seconds in the locale's ``%x`` date format (``mm/dd/yy`` in the C
        locale: a four-digit year is an error), so it is asked from the start of the second of
        ``since``; the records keep their ``audit(EPOCH.MS:SERIAL)`` stamp (no ``-i``), by which
        those of that second from before ``since`` are dropped. The kernel log has the same stamps.
        """
        start = math.floor(since)
        script = (
            "if command -v ausearch >/dev/null; then "
            f"LC_ALL=C ausearch -m AVC,USER_AVC -ts $(LC_ALL=C date -d @{start} '+%x %T') 2>/dev/null "
            f"| grep -E {DENIED}; "
            "elif command -v journalctl >/dev/null; then "
            f"journalctl -k -q --no-pager --since=@{start} 2>/dev/null | grep -E {DENIED}; "
            "fi; true"
        )
        out = self.host.conn.run(script, raise_on_error=False).stdout
        return [Crash(self.host.name, "denial", line) for line in parse_lines(out) if not logged_before(line, since)]


def logged_before(record: str, since: float) -> bool:
    """Whether the audit record ``record`` has a stamp (``audit(1733400000.123:4242)``) older than ``since``."""
    stamp = AUDIT_STAMP.search(record)
    return stamp is not None and float(stamp.group(1)) < since


def parse_lines(text: str) -> list[str]:
    """Non-empty, stripped lines."""
    return [line.strip() for line in text.splitlines() if line.strip()]
