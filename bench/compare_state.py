"""The lab hosts' state before and after every run of ``bench/compare.py``: a drift fails the bench, with its paths.

A run that leaves a host changed (a file not restored, a user not removed, a package not purged, a
service left stopped) would hand the next variant a different host and tilt its figures; worse, it
would mean a tool did not undo its work, which is the thing both tools promise. So after every
pytest run of every variant the bench takes the hosts' fingerprint again and compares it with the
one taken before the first run::

    state = HostState.take(blab)        # before the first run
    ...                                 # a pytest run
    state.check("round 1, ops, pytest-mh (lazy)")   # raises StateDrift naming host and paths

What is compared, per host:

* ``compat_suite.fingerprints``: the digest of every entry of /etc and /root (path, size, mode,
  owner), the one ``bench/compat_suite.py`` compares after its runs. On a mismatch the full listing
  (``compat_suite.LISTING``) is diffed against the one kept from the start, so the error names the paths.
* the bench's own objects outside /etc: installed packages and their dpkg state, apt's auto-installed
  marks, the bench service's active/enabled state, and what is left in /tmp and /home.

shadow-utils keeps the previous version of the account files it rewrites (``/etc/passwd-``,
``/etc/group-``, ``/etc/shadow-``, ``/etc/gshadow-``, ``/etc/subuid-``, ``/etc/subgid-``): after an
add and its undo the account files are as before, but their backups hold the state before the
undo. Before every fingerprint those backups are made copies of their files (:data:`SETTLE`), so
that they compare equal exactly when the account files do.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from compat_suite import LISTING, fingerprints

if TYPE_CHECKING:
    from compare_lab import BenchLab

__all__ = ["DETAIL", "SETTLE", "HostState", "StateDrift", "drifted_lines"]

SETTLE = (
    "for f in passwd group shadow gshadow subuid subgid; do"
    " if [ -f /etc/$f ]; then cp -p /etc/$f /etc/$f-; else rm -f /etc/$f-; fi; done"
)
# The bench's objects outside /etc and /root, one "kind name state" line each, sorted.
DETAIL = (
    "{ dpkg-query -W -f='package ${Package} ${db:Status-Abbrev}\\n';"
    " apt-mark showauto 2>/dev/null | sed 's/^/apt-auto /';"
    ' echo "unit blsvc.service $(systemctl is-active blsvc.service) $(systemctl is-enabled blsvc.service 2>&1)";'
    " find /tmp /home -mindepth 1 -maxdepth 1 -printf 'left %p %m %u\\n'; } | sort"
)


class StateDrift(RuntimeError):
    """A host is not as it was before the bench's first run; ``.drift`` maps each host to its changed lines."""

    def __init__(self, where: str, drift: dict[str, list[str]]) -> None:
        self.where = where
        self.drift = drift
        lines = [f"{where}: the hosts are not as before the first run (- before, + now):"]
        for host, changed in drift.items():
            lines += [f"  {host}: {line}" for line in changed]
        super().__init__("\n".join(lines))


def drifted_lines(before: Iterable[str], now: Iterable[str]) -> list[str]:
    """The lines only in ``before`` (``- line``) or only in ``now`` (``+ line``), in order."""
    return [
        line
        for line in difflib.unified_diff(list(before), list(now), lineterm="", n=0)
        if line[:1] in "-+" and not line.startswith(("---", "+++"))
    ]


@dataclass
class HostState:
    """The hosts' state at the start of the bench, and the check of every later state against it."""

    blab: BenchLab
    hosts: tuple[str, ...]
    digests: dict[str, str]
    listings: dict[str, list[str]]
    details: dict[str, list[str]]
    checks: int = 0
    seconds: float = 0.0  # spent in the checks (outside every timed figure)
    log: list[str] = field(default_factory=list)

    @classmethod
    def take(cls, blab: BenchLab, hosts: Iterable[str] | None = None) -> HostState:
        """The state of ``hosts`` (all of the lab's by default) now: the reference of every later check."""
        names = tuple(hosts if hosts is not None else blab.addresses)
        _settle(blab, names)
        return cls(
            blab,
            names,
            fingerprints(blab.lab, names),
            {h: _lines(blab, h, LISTING) for h in names},
            {h: _lines(blab, h, DETAIL) for h in names},
        )

    def check(self, where: str) -> None:
        """Compare the hosts with the start; raise :class:`StateDrift` naming each changed path or object.

        :param where: What ran last (round, run, variant), for the message.
        """
        self.checks += 1
        started = time.monotonic()
        _settle(self.blab, self.hosts)
        digests = fingerprints(self.blab.lab, self.hosts)
        drift: dict[str, list[str]] = {}
        for host in self.hosts:
            changed = drifted_lines(self.details[host], _lines(self.blab, host, DETAIL))
            if digests[host] != self.digests[host]:
                changed += drifted_lines(self.listings[host], _lines(self.blab, host, LISTING))
                changed = changed or [f"fingerprint {self.digests[host]!r} -> {digests[host]!r}"]
            if changed:
                drift[host] = changed
        self.seconds += time.monotonic() - started
        if drift:
            raise StateDrift(where, drift)
        self.log.append(where)


def _settle(blab: BenchLab, hosts: Iterable[str]) -> None:
    for host in hosts:
        _run(blab, host, SETTLE)


def _lines(blab: BenchLab, host: str, command: str) -> list[str]:
    return _run(blab, host, command).splitlines()


def _run(blab: BenchLab, host: str, command: str) -> str:
    done = blab.lab.run_inside(host, command)
    if done.returncode != 0:
        raise RuntimeError(f"{host}: {command!r} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return str(done.stdout)
