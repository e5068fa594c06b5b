"""Hosts that stopped answering: after the first connection failure, later calls fail at once."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Unpack, final

from ...conn import ScriptTransport
from ...errors import HostUnreachableError

if TYPE_CHECKING:
    from ...conn import ExecOptions, Transport
    from ...host import MultihostHost

__all__ = ["DeadHosts", "GuardedTransport"]

log = logging.getLogger("pytest_mh_ansible.conn")


@final
class DeadHosts:
    """The hosts found unreachable during the session, with the first failure's reason."""

    def __init__(self) -> None:
        self._dead: dict[str, str] = {}
        self._answered: set[str] = set()
        self._lock = threading.Lock()

    def answered(self, host: str) -> None:
        """A command on ``host`` came back (a connect alone proves nothing: ssh connects lazily)."""
        self._answered.add(host)

    def mark(self, host: str, reason: str) -> None:
        with self._lock:
            if host not in self._dead:
                self._dead[host] = reason
                log.warning("%s: marked unreachable for the rest of the session: %s", host, reason)

    def reason(self, host: str) -> str | None:
        return self._dead.get(host)

    def __contains__(self, host: object) -> bool:
        return host in self._dead

    def error(self, host: str) -> HostUnreachableError:
        """The error for a later use of ``host``: "stopped answering" only when its connection answered before."""
        if host in self._answered:
            return HostUnreachableError(host, f"it stopped answering earlier in this session: {self._dead.get(host)}")
        return HostUnreachableError(host, f"it did not answer earlier in this session: {self._dead.get(host)}")

    def guard(self, host: MultihostHost) -> None:
        """Put ``host``'s connection behind a :class:`GuardedTransport` (once)."""
        conn: Any = host.conn
        transport = conn._transport
        if not isinstance(transport, GuardedTransport):
            conn._transport = GuardedTransport(host.name, transport, self)


@final
class GuardedTransport:
    """A transport that fails at once for a host marked dead, and marks it on a connection failure.

    Without it every later command (each test, each rollback step) would wait for the ssh
    ``ConnectTimeout`` again.

    :param host: The inventory hostname.
    :param inner: The real transport.
    :param dead: The session's registry of dead hosts.
    :param marks: Whether a connection failure marks the host dead. The lease renewal thread's
        transport does not: it runs beside the tests, so it may meet the host while its sshd restarts
        (a test may restart it), and one failed renewal is harmless (the lease lives on for its TTL).
        Only the tests' own commands and module calls decide that a host is dead.
    """

    def __init__(self, host: str, inner: Transport, dead: DeadHosts, *, marks: bool = True) -> None:
        self.host = host
        self.inner = inner
        self._dead = dead
        self._marks = marks

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _check(self) -> None:
        if self.host in self._dead:
            raise self._dead.error(self.host)

    @contextmanager
    def _guarded(self) -> Iterator[None]:
        """Fail at once for a dead host; a connection failure inside marks the host dead (if ``marks``)."""
        self._check()
        try:
            yield
        except HostUnreachableError as err:
            if self._marks:
                self._dead.mark(self.host, err.reason)
            raise

    def connect(self) -> None:
        with self._guarded():
            self.inner.connect()

    def close(self) -> None:
        self.inner.close()

    def exec(self, command: str, **options: Unpack[ExecOptions]) -> tuple[int, bytes, bytes]:
        with self._guarded():
            result = self.inner.exec(command, **options)
        self._dead.answered(self.host)
        return result

    def script(self, source: bytes, request: Any) -> tuple[int, bytes, bytes] | None:
        """The inner transport's agent runs a Python script (None: it has no agent; see ``ScriptTransport``)."""
        if not isinstance(self.inner, ScriptTransport):
            return None
        with self._guarded():
            result = self.inner.script(source, request)
        self._dead.answered(self.host)
        return result

    def put(self, local: str | os.PathLike[str], remote: str) -> None:
        with self._guarded():
            self.inner.put(local, remote)

    def get(self, remote: str, local: str | os.PathLike[str]) -> None:
        with self._guarded():
            self.inner.get(remote, local)
