"""Leases on hosts that hold across controllers: a directory on the host says who uses it, until when.

The per-host ``flock`` (``locks``) keeps the pytest processes of one machine apart. Two CI jobs on
two machines that share one inventory need a lock that both see: the host itself. A lease is a
directory made with ``mkdir`` (atomic) on the host, over the host's own connection, holding one
line ``<controller>/<pid>/<run> <expiry>``. The holder renews the expiry while its session lives
(a thread, every third of the time to live); a lease whose expiry has passed on the host's clock
is stale and the next session takes it over. A session that waits longer than
``--mh-lease-timeout`` fails the topology with :class:`HostLeaseError`, naming the holder.

A host is left as it was found, the tool's own traces included: taking a lease notes which of the
directories the session may leave behind (:data:`TRACES`: Ansible's ``~/.ansible/tmp``, the snapshot
directory) are absent, and giving it back removes those again when they are empty (``rmdir``:
never another session's content), then the lease root if no other lease is in it.
"""

from __future__ import annotations

import logging
import re
import shlex
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import HostLeaseError
from ..rollback.snapshots import SNAPSHOT_DIR
from .connect import in_parallel

if TYPE_CHECKING:
    from ...conn import Transport

__all__ = ["LEASE_ROOT", "TRACES", "HostLeases", "LeaseOwner", "lease_path"]

log = logging.getLogger("pytest_mh_ansible")

LEASE_ROOT = "/tmp/pytest-mh-ansible-leases"
"""Where leases live on a host; ``/tmp`` because any user may write there and a reboot ends every lease."""

TRACES: tuple[str, ...] = (
    "~/.ansible/tmp",
    "~/.ansible",
    SNAPSHOT_DIR,
    SNAPSHOT_DIR.rpartition("/")[0],
)
"""Directories a session may make on a host for its own use (``~``: the login user's home).

Each one that is absent when a lease is taken is removed when it is given back, if it is empty:
Ansible's remote temporary directory (a module makes it and leaves it), the snapshots' directory.
"""

_ID_RE = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(frozen=True)
class LeaseOwner:
    """Who takes leases: the controller's id, the process and the run (one token on the host)."""

    controller: str
    pid: int
    run: str

    def __post_init__(self) -> None:
        for value in (self.controller, self.run):
            if not _ID_RE.match(value):
                raise ValueError(f"lease owner: {value!r} may only hold letters, digits, '.', '_' and '-'")

    @property
    def token(self) -> str:
        return f"{self.controller}/{self.pid}/{self.run}"


def lease_path(host: str, root: str = LEASE_ROOT) -> str:
    """The lease directory of inventory host ``host`` (one per inventory name: local hosts share a /tmp)."""
    return f"{root}/{re.sub(r'[^A-Za-z0-9._-]', '_', host)}"


# $1: lease dir, $2: owner token, $3: seconds to live, $4: traces noted before (newline-separated: what an
# earlier release of this session could not remove yet), $5...: the traces (TRACES). Prints "acquired" or
# "held <owner> <expiry>". The lease records, in "absent", which traces did not exist (and those of $4): its
# release removes them (if empty). A takeover keeps the dead session's record. The lease root may vanish between its
# mkdir -p and the lease's mkdir (another session's release removed it, empty): made() tries again.
_TAKE = r"""
d=$1; me=$2; ttl=$3; before=$4; shift 4; now=$(date +%s)
gone=$(for p in "$@"; do
  case $p in "~/"*) p=$HOME/${p#"~/"};; esac
  [ -e "$p" ] || [ -L "$p" ] || printf '%s\n' "$p"
done)
write() { printf '%s %s\n' "$me" "$((now + ttl))" > "$d/owner.$$" && mv -f "$d/owner.$$" "$d/owner"; }
note() { printf '%s\n' "$@" | sed '/^$/d' | LC_ALL=C sort -u > "$d/absent"; }
made() {
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    mkdir -p "${d%/*}" 2>/dev/null; chmod 1777 "${d%/*}" 2>/dev/null
    if mkdir "$d" 2>/dev/null; then return 0; fi
    [ -d "${d%/*}" ] && return 1
  done
  return 1
}
if made; then note "$before" "$gone" && write && echo acquired && exit 0; fi
line=$(cat "$d/owner" 2>/dev/null); set -- $line
if [ "$1" = "$me" ]; then write && echo acquired && exit 0; fi
exp=${2:-}
if [ -z "$exp" ]; then exp=$(( $(stat -c %Y "$d" 2>/dev/null || echo "$now") + ttl )); fi
if [ "$now" -gt "$exp" ] && mkdir "$d/takeover" 2>/dev/null; then
  old=$(cat "$d/absent" 2>/dev/null)
  rm -rf "$d" && made && note "$old" "$before" "$gone" && write && echo "acquired took-over $1" && exit 0
fi
echo "held ${1:-unknown} $exp"
"""

# $1: lease dir, $2: owner token, $3: seconds to live. Prints "renewed" or "lost <owner> <expiry>".
_RENEW = r"""
d=$1; me=$2; ttl=$3; now=$(date +%s)
line=$(cat "$d/owner" 2>/dev/null); set -- $line
if [ "$1" = "$me" ]; then
  printf '%s %s\n' "$me" "$((now + ttl))" > "$d/owner.$$" && mv -f "$d/owner.$$" "$d/owner" && echo renewed && exit 0
fi
echo "lost ${1:-none} ${2:-0}"
"""

# $1: lease dir, $2: owner token. Removes the lease only if it is ours, then the traces it found absent
# (deepest first, only when empty) and the lease root when no other lease is in it. Prints "released", a tab
# and the noted traces that are still there (tab-separated: not empty yet, for the next take to note), or
# "not-ours" (an answer is required: a command that prints nothing is taken for a failed one).
_RELEASE = r"""
d=$1; me=$2
line=$(cat "$d/owner" 2>/dev/null); set -- $line
if [ "$1" = "$me" ]; then
  gone=$(LC_ALL=C sort -r "$d/absent" 2>/dev/null)
  rm -rf "$d" || exit 1
  printf '%s\n' "$gone" | while IFS= read -r p; do [ -n "$p" ] && rmdir "$p" 2>/dev/null; done
  rmdir "${d%/*}" 2>/dev/null
  printf released
  printf '%s\n' "$gone" | while IFS= read -r p; do [ -n "$p" ] && [ -e "$p" ] && printf '\t%s' "$p"; done
  echo && exit 0
fi
echo not-ours
"""


def _script(body: str, *args: str) -> str:
    return "sh -c " + shlex.quote(body) + " lease " + " ".join(shlex.quote(arg) for arg in args)


class HostLeases:
    """The leases one session holds, taken before a topology's hosts are used and renewed in a thread.

    Example::

        leases = HostLeases(LeaseOwner("ci-2", os.getpid(), run_id), transport_for, ttl=60, timeout=600)
        leases.acquire(["client1", "server1"])   # waits (up to timeout) while another session holds one
        ...
        leases.close()                            # releases all, stops renewing

    :param transport_for: A transport of the renewal thread's own for a host (made on the first
        renewal), so that it never shares the transport the tests use.
    :param command_transport: The transport for the lease commands of the calling thread (take,
        release): the tests' own connection of the host, so that a host is connected once. None:
        transports of ``transport_for``, connected side by side before the leases are taken.
    :param ttl: Seconds a lease lives without renewal (a killed session's hosts come free after it).
    :param timeout: Seconds to wait for a leased host before :class:`HostLeaseError`.
    :param traces: The directories a session may leave on a host (:data:`TRACES`), removed again on release.
    """

    def __init__(
        self,
        owner: LeaseOwner,
        transport_for: Callable[[str], Transport],
        *,
        command_transport: Callable[[str], Transport] | None = None,
        ttl: float = 60,
        timeout: float = 600,
        poll: float = 1.0,
        root: str = LEASE_ROOT,
        traces: tuple[str, ...] = TRACES,
    ) -> None:
        self.owner = owner
        self.ttl = max(3, int(ttl))
        self.timeout = timeout
        self.poll = poll
        self.root = root
        self.traces = traces
        self._transport_for = transport_for
        self._command_transport = command_transport
        # Our own transports: the renewal thread's (and the caller's, without a command_transport).
        self._transports: dict[str, Transport] = {}
        self._held: set[str] = set()
        # Traces noted at a take that its release could not remove yet (not empty): the next take notes them.
        self._kept: dict[str, list[str]] = {}
        self.taken_over: dict[str, set[str]] = {}
        """The owners whose expired leases this session took over, by host (their sessions are gone)."""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def held(self) -> frozenset[str]:
        return frozenset(self._held)

    def _own(self, host: str) -> Transport:
        transport = self._transports.get(host)
        if transport is None:
            transport = self._transports[host] = self._transport_for(host)
        return transport

    def _transport(self, host: str, *, renewal: bool = False) -> Transport:
        shared = self._command_transport
        return self._own(host) if renewal or shared is None else shared(host)

    def _run(self, host: str, body: str, *args: str, renewal: bool = False, transport: Transport | None = None) -> str:
        if transport is None:
            transport = self._transport(host, renewal=renewal)
        rc, out, err = transport.exec(_script(body, *args), become=False, timeout=30)
        text = out.decode("utf-8", errors="replace").strip()
        if rc != 0 or not text:
            raise HostLeaseError(
                host, f"(lease command failed, rc={rc}: {err.decode(errors='replace').strip()})", None, 0
            )
        return text.splitlines()[-1]

    def acquire(self, hosts: Iterable[str]) -> None:
        """Take a lease on every host not held yet, in sorted order; wait while another session holds one.

        :raises HostLeaseError: A host stayed held by another owner for ``timeout`` seconds.
        :raises HostUnreachableError: A host cannot be reached (from its transport).
        """
        wanted = sorted(set(hosts) - self._held)
        self._connect(wanted)
        for host in self._take_side_by_side(wanted):
            started = time.monotonic()
            announced = False
            while True:
                answer = self._take(host)
                if self._taken(host, answer):
                    break
                _, _, rest = answer.partition(" ")
                holder, _, expiry = rest.partition(" ")
                waited = time.monotonic() - started
                if waited >= self.timeout:
                    raise HostLeaseError(host, holder, float(expiry) if expiry.isdigit() else None, waited)
                if not announced:
                    log.warning("host %s is leased by %s; waiting (up to %.0f s)", host, holder, self.timeout)
                    announced = True
                time.sleep(min(self.poll, max(0.0, self.timeout - waited)))
        self._start()

    def _take(self, host: str, transport: Transport | None = None) -> str:
        """One try at ``host``'s lease: the take script's answer."""
        before = "\n".join(self._kept.get(host, ()))
        return self._run(
            host,
            _TAKE,
            lease_path(host, self.root),
            self.owner.token,
            str(self.ttl),
            before,
            *self.traces,
            transport=transport,
        )

    def _taken(self, host: str, answer: str) -> bool:
        """Whether ``answer`` gave us ``host``'s lease; if so it counts as held."""
        if answer.startswith("acquired took-over "):
            # The holder let its lease expire: it is gone, and its journal on the host may be replayed.
            previous = answer.removeprefix("acquired took-over ").strip()
            log.warning("host %s: took over the expired lease of %s", host, previous)
            self.taken_over.setdefault(host, set()).add(previous)
        elif answer != "acquired":
            return False
        with self._lock:
            self._held.add(host)
            self._kept.pop(host, None)  # noted in the lease again
        return True

    def _take_side_by_side(self, wanted: list[str]) -> list[str]:
        """Try every lease of ``wanted`` (sorted) at once; return those still to take, in order, one by one.

        Usually all are free and this is one round trip instead of one per host. The order that
        keeps two sessions from waiting on each other forever is kept: when a host is held by
        another session (or its take failed), the leases taken here on hosts sorted after it are
        given back, and the caller goes on from that host in order, as if it had never left it.
        """
        if len(wanted) < 2:
            return wanted
        transports = [self._transport(host) for host in wanted]  # made here: the session's hosts are not thread-safe

        def take(index: int) -> str | None:
            try:
                return self._take(wanted[index], transports[index])
            except Exception as err:  # taken again in order below, where it is raised
                log.debug("host %s: lease not taken side by side: %s", wanted[index], err)
                return None

        answers = in_parallel(range(len(wanted)), take)
        first_missing = len(wanted)
        for index, (host, answer) in enumerate(zip(wanted, answers, strict=True)):
            if not (answer is not None and self._taken(host, answer)) and first_missing == len(wanted):
                first_missing = index
        self.release([host for host in wanted[first_missing + 1 :] if host in self._held])
        return [host for host in wanted[first_missing:] if host not in self._held]

    def _connect(self, hosts: list[str]) -> None:
        """Open our own lease transports of ``hosts`` side by side (an ssh connection each); errors surface later.

        One ``true`` each, side by side: the ssh plugin connects on its first command, so without it
        every host's handshake would wait for the previous one in the ordered lease loop. With a
        ``command_transport``, the caller has connected the hosts already.
        """
        if self._command_transport is not None:
            return
        new = [host for host in hosts if host not in self._transports]

        def connect(host: str) -> None:
            try:
                transport = self._own(host)
                transport.connect()
                transport.exec("true", become=False, timeout=30)
            except Exception as err:  # the lease command on this host reports it
                log.debug("host %s: lease connection failed: %s", host, err)

        for host in new:
            self._own(host)
        in_parallel(new, connect)

    def renew(self) -> list[str]:
        """Push every held lease's expiry out by ``ttl``; returns the hosts whose lease was lost."""
        lost: list[str] = []
        for host in sorted(self.held):
            try:
                answer = self._run(
                    host, _RENEW, lease_path(host, self.root), self.owner.token, str(self.ttl), renewal=True
                )
            except Exception as err:  # a dead host: its lease runs out by itself
                log.warning("host %s: lease not renewed: %s", host, err)
                continue
            if answer != "renewed":
                # "lost <owner> <expiry>"; owner "none": the lease directory is gone
                words = answer.split()
                holder = words[1] if len(words) > 1 and words[0] == "lost" else repr(answer)
                log.error("host %s: lease lost to %s", host, "nobody (it was removed)" if holder == "none" else holder)
                lost.append(host)
        return lost

    def release(self, hosts: Iterable[str] | None = None) -> None:
        """Give leases back (all when ``hosts`` is None); a host that cannot be reached keeps it until expiry."""
        with self._lock:
            names = sorted(self._held if hosts is None else set(hosts) & self._held)
            self._held.difference_update(names)
        transports = [self._transport(host) for host in names]  # side by side below: one round trip for all

        def give_back(index: int) -> None:
            host = names[index]
            try:
                answer = self._run(
                    host, _RELEASE, lease_path(host, self.root), self.owner.token, transport=transports[index]
                )
            except Exception as err:
                log.warning("host %s: lease not released (it expires by itself): %s", host, err)
                return
            word, *kept = answer.split("\t")
            if word == "released" and kept:
                with self._lock:
                    self._kept[host] = kept

        in_parallel(range(len(names)), give_back)

    def close(self) -> None:
        """Release every lease, stop renewing and close the lease transports."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.release()
        for transport in self._transports.values():
            try:
                transport.close()
            except Exception as err:
                log.debug("lease transport: close failed: %s", err)
        self._transports.clear()

    def _start(self) -> None:
        if self._thread is None and not self._stop.is_set():
            self._thread = threading.Thread(target=self._renew_loop, name="mh-lease-renewal", daemon=True)
            self._thread.start()

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            self.renew()
