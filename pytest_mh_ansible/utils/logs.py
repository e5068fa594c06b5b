"""Logs: the journal or a log file since the test started."""

from __future__ import annotations

import shlex
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import MultihostError
from ..utility import MultihostUtility

if TYPE_CHECKING:
    from ..host import MultihostHost

__all__ = ["Logs", "mark_test_start", "test_start"]

_test_start: float | None = None
_instances: weakref.WeakSet[Logs] = weakref.WeakSet()


def mark_test_start() -> None:
    """Called by the plugin before each test's setup: the controller's clock, and file marks of followed logs."""
    global _test_start
    _test_start = time.time()
    for logs in list(_instances):
        logs._mark_files()


def test_start() -> float:
    """The controller's time at which the current test started (now, outside a test)."""
    return _test_start if _test_start is not None else time.time()


class Logs(MultihostUtility["MultihostHost"]):
    """Read the journal or log files since the test started, and fetch logs to the controller.

    "Since the test started" means before the test's setup (its fixtures included): the plugin marks
    the time before every test, whether or not the utility exists yet. For the journal that time is
    converted to the host's clock (the offset is measured once). A file is *followed* from the first
    time it is read: its inode and size are remembered before every later test, so ``file()`` returns
    only what was appended, and the whole file after a rotation or truncation. The first read of a
    file that was not followed when the test started returns the whole file; call :meth:`follow` in a
    session fixture (or ``host.pytest_setup``) to follow it from the first test.

    Example::

        def test_login(client, server):
            client.host.conn.run("app login alice")
            assert "alice logged in" in server.logs.file("/var/log/app.log")
            assert "started" in server.logs.journal(unit="app")
            server.logs.collect(["/var/log/app.log"], tmp_path)
    """

    def __init__(self, host: MultihostHost) -> None:
        super().__init__(host)
        self._offset: float | None = None
        self._marks: dict[str, tuple[str, int]] = {}  # path -> (inode, size) at the test start
        self._followed: list[str] = []
        _instances.add(self)

    def follow(self, *paths: str) -> None:
        """Remember these files' inode and size now and before every later test."""
        for path in paths:
            if path not in self._followed:
                self._followed.append(path)
        self._mark_files(paths)

    def journal(self, unit: str | None = None, *, since_test_start: bool = True) -> str:
        """``journalctl`` output (of ``unit``) since the test started.

        :raises MultihostError: the host has no journald (``journalctl`` missing, e.g. sysv lab hosts).
        """
        cmd = "journalctl --no-pager -q -o short-iso"
        if unit:
            cmd += f" -u {shlex.quote(unit)}"
        if since_test_start:
            cmd += f" --since=@{self.host_time(test_start()):.6f}"
        result = self.host.conn.run(
            f"test -d /run/systemd/journal && command -v journalctl >/dev/null || exit 127; {cmd}", raise_on_error=False
        )
        if result.rc == 127:
            raise MultihostError(
                f"host {self.host.name!r}: no journald (no /run/systemd/journal or no journalctl); "
                "read log files with logs.file(path)"
            )
        if result.rc != 0:
            result.throw()
        return result.stdout

    def file(self, path: str, *, since_test_start: bool = True) -> str:
        """The text of ``path`` appended since the test started (all of it after rotation or truncation)."""
        if path not in self._followed:
            self._followed.append(path)
        mark = self._marks.get(path) if since_test_start else None
        q = shlex.quote(path)
        out = self.host.conn.run(f"stat -c '%i %s' {q} && cat {q}", raise_on_error=False)
        if out.rc != 0:
            raise MultihostError(f"host {self.host.name!r}: cannot read log file {path!r}: {out.stderr.strip()}")
        head, _, text = out.stdout.partition("\n")
        inode, size = head.split()
        if mark is None or mark[0] != inode or int(size) < mark[1]:
            return text
        data = text.encode()
        return data[mark[1] :].decode(errors="replace")

    def collect(self, paths: list[str], local_dir: str | Path) -> list[Path]:
        """Copy ``paths`` from the host into ``local_dir/<host>/`` (whole files); return the local paths."""
        target = Path(local_dir) / self.host.name
        target.mkdir(parents=True, exist_ok=True)
        copied: list[Path] = []
        for path in paths:
            local = target / path.strip("/").replace("/", "_")
            result = self.host.conn.run(f"cat {shlex.quote(path)}", raise_on_error=False)
            if result.rc == 0:
                local.write_text(result.stdout)
                copied.append(local)
        return copied

    def host_time(self, controller_time: float) -> float:
        """``controller_time`` on the host's clock (the offset is measured once per host).

        The host read its clock somewhere between the request and the answer, so the offset lies
        between ``remote - answered`` and ``remote - asked``. A "since" filter must not miss what
        the test logged at its very start: the lower bound is taken, from the quickest of three
        reads (a loaded machine may delay one answer by a lot; then the bound is off by that much).
        """
        if self._offset is None:
            bounds: list[tuple[float, float]] = []
            for _ in range(3):
                asked = time.time()
                remote = float(self.host.conn.run("date +%s.%N").stdout.strip())
                answered = time.time()
                bounds.append((answered - asked, remote - answered))
            self._offset = min(bounds)[1]
        return controller_time + self._offset

    def _mark_files(self, paths: tuple[str, ...] | list[str] | None = None) -> None:
        paths = list(paths if paths is not None else self._followed)
        if not paths:
            return
        script = "; ".join(f"stat -c '%i %s' {shlex.quote(p)} 2>/dev/null || echo - 0" for p in paths)
        lines = self.host.conn.run(script, raise_on_error=False).stdout.splitlines()
        for path, line in zip(paths, lines, strict=False):
            inode, _, size = line.partition(" ")
            self._marks[path] = (inode, int(size or 0))
