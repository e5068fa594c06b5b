"""``pytest_mh.utils.hostname``: ``HostnameUtils``; a changed name is put back by the rollback journal."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any, Self

from ..conn import HostConnection, compat_conn
from ..utility import MultihostReentrantUtility

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["HostnameUtils"]


class HostnameUtils(MultihostReentrantUtility[Any]):
    """pytest-mh's hostname utility: read the host's name, or change it for the test.

    Setting :attr:`name` changes the running (kernel) name with ``hostname NAME``, as pytest-mh
    does; ``/etc/hostname`` is not touched. The first change in a scope (the test, the topology
    setup, the session setup) records the old name in the rollback journal, which puts it back
    when the scope ends, whether the test passed or not, and also when the utility is used
    outside a role. Used as ``with hostname:`` (or entered as a role utility), the name is also
    put back when the block ends.

    A role creates it in its ``__init__``, as in pytest-mh: ``self.hostname = HostnameUtils(self.host)``.

    Example::

        def test_renamed(client):
            client.hostname.name = "renamed.test"   # back to the old name after the test
            assert client.hostname.shortname == "renamed"
    """

    def __init__(self, host: Any) -> None:
        super().__init__(host)
        # One entry per open ``with`` block: the name before its first change, None while unchanged.
        self._blocks: list[str | None] = []

    @property
    def _conn(self) -> HostConnection:
        return compat_conn(self.host)

    def __enter__(self) -> Self:
        self._blocks.append(None)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        old = self._blocks.pop() if self._blocks else None
        if old is not None:
            self.logger.info(f"hostname: putting back the name {old!r}")
            self.name = old

    @property
    def name(self) -> str:
        """The host's current name (``hostname``); setting it renames the host until the scope ends."""
        return self._conn.exec(["hostname"]).stdout.strip()

    @name.setter
    def name(self, name: str) -> None:
        if not name or name.startswith("-") or any(c.isspace() for c in name):
            raise ValueError(f"host {self.host.name!r}: {name!r} is not a host name")
        self.logger.info(f"hostname: renaming the host to {name!r}")
        # One command: print the old name, then set the new one.
        old = self._conn.run(f"hostname && hostname {shlex.quote(name)}").stdout.strip()
        if old == name:
            return
        if self._blocks and self._blocks[-1] is None:
            self._blocks[-1] = old
        self._record(old)

    def _record(self, old: str) -> None:
        """Put ``old`` back when the scope ends, if this scope has not changed the name already."""
        journal = self.host.journal
        key = f"compat.hostname:{self.host.name}"
        if journal.recall(key) is not None:
            return
        journal.remember(key, old)
        conn = self._conn
        command = f"hostname {shlex.quote(old)}"

        def undo() -> None:
            conn.run(command)

        journal.record(self.host, f"hostname (was {old})", undo)

    @property
    def shortname(self) -> str:
        """The name up to its first dot (``hostname -s``)."""
        return self._conn.exec(["hostname", "-s"]).stdout.strip()

    @property
    def fqdn(self) -> str:
        """The fully qualified name as the resolver gives it (``hostname -f``).

        :raises ProcessError: The host cannot resolve its own name (as in pytest-mh).
        """
        return self._conn.exec(["hostname", "-f"]).stdout.strip()
