"""``pytest_mh.utils.selinux``: ``SELinux`` (a file's context, ``ls -Z``) and ``SELinuxContext``."""

from __future__ import annotations

from typing import Any

from ..conn import HostConnection, ProcessLogLevel, compat_conn
from ..utility import MultihostUtility

__all__ = ["SELinux", "SELinuxContext"]


class SELinuxContext:
    """An SELinux security context ``user:role:type:sensitivity[:categories]``, as ``ls -Z`` prints it.

    Two contexts are equal (and hash alike) when all five parts are. ``str()`` gives the parts in
    parentheses, as pytest-mh (``(system_u:object_r:etc_t:s0:None)``).
    """

    def __init__(self, user: str, role: str, type: str, sensitivity: str, categories: str | None) -> None:
        self.user: str = user
        self.role: str = role
        self.type: str = type
        self.sensitivity: str = sensitivity
        self.categories: str | None = categories

    def _parts(self) -> tuple[str, str, str, str, str | None]:
        return self.user, self.role, self.type, self.sensitivity, self.categories

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SELinuxContext) and self._parts() == other._parts()

    def __hash__(self) -> int:
        return hash(self._parts())

    def __str__(self) -> str:
        return f"({self.user}:{self.role}:{self.type}:{self.sensitivity}:{self.categories})"

    def __repr__(self) -> str:
        return str(self)

    @classmethod
    def FromOutput(cls, stdout: str) -> SELinuxContext:
        """The context at the start of ``ls -Z`` output (``CONTEXT PATH``).

        :raises ValueError: The output does not start with a context of 4 or 5 ``:``-separated parts;
            ``?`` (the file has no context: SELinux is not enabled on the host) says so.
        """
        words = stdout.split(maxsplit=1)
        if len(words) < 2:
            raise ValueError(f"Unexpected value: expecting space separated string, got {stdout!r}")
        context = words[0]
        if context == "?":
            raise ValueError(
                f"no SELinux context ('ls -Z' prints '?' for {words[1].strip()!r}): SELinux is not enabled on the host"
            )
        parts = context.split(":", 4)
        if len(parts) not in (4, 5):
            raise ValueError(f"Unexpected value: got {len(parts)} labels in {context!r}, expecting 4 or 5")
        return cls(parts[0], parts[1], parts[2], parts[3], parts[4] if len(parts) == 5 else None)


class SELinux(MultihostUtility[Any]):
    """pytest-mh's SELinux utility: the SELinux context of a file.

    Differences from pytest-mh:

    * :meth:`get_file_context` of a directory gives the directory's own context (``ls -Zd``);
      pytest-mh's ``ls -Z`` lists the directory and parses its first entry.
    * On a host without SELinux (``ls -Z`` prints ``?``), :meth:`get_file_context` raises a
      ``ValueError`` that says so, where pytest-mh raises ``ValueError("Unexpected value: got 1
      labels, expecting 4 or 5")``; both are ``ValueError``. A missing file gives None, as in pytest-mh.

    A role creates it in its ``__init__``, as in pytest-mh: ``self.selinux = SELinux(self.host)``.

    Example::

        def test_context(client):
            assert client.selinux.get_file_context("/etc/passwd").type == "passwd_file_t"
    """

    @property
    def _conn(self) -> HostConnection:
        return compat_conn(self.host)

    def get_file_context(self, path: str) -> SELinuxContext | None:
        """The SELinux context of ``path``; None when ``ls`` cannot read it (no such file).

        :raises ValueError: The host has no SELinux (the file has no context), or ``ls -Z`` printed
            something else than a context.
        """
        self.logger.info(f'Getting SELinux context for "{path}"')
        result = self._conn.exec(["ls", "-Zd", "--", path], log_level=ProcessLogLevel.Error, raise_on_error=False)
        if result.rc != 0:
            return None
        return SELinuxContext.FromOutput(result.stdout)
