"""``pytest_mh.utils.fs``: ``LinuxFileSystem`` on this project's :class:`~pytest_mh_ansible.FileSystem`."""

from __future__ import annotations

import textwrap
from typing import Any

from ... import FileSystem
from ..conn import ProcessResult, compat_conn

__all__ = ["LinuxFileSystem"]


class LinuxFileSystem(FileSystem):
    """pytest-mh's file system utility: every change is undone after the test (or scope).

    Changes go through Ansible modules and the rollback journal (content, mode, owner and
    existence come back). Beyond :class:`~pytest_mh_ansible.FileSystem` it has pytest-mh's
    ``mktmp(contents)``, ``truncate``, ``sed``, ``wc`` and ``diff``; ``read`` returns the text
    without its last newline, as pytest-mh's does.

    Example::

        class Client(MultihostRole[ClientHost]):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.fs = LinuxFileSystem(self.host)
    """

    def __init__(self, host: Any) -> None:
        super().__init__(host)
        self.artifacts: set[str] = set()

    def read(self, path: str) -> str:
        """The text of ``path`` without its last newline (as pytest-mh's ``read``)."""
        return super().read(path).removesuffix("\n")

    def backup(self, path: str) -> bool:  # type: ignore[override]  # pytest-mh returns True
        """Snapshot ``path`` now; restored at the end of the scope (or by :meth:`restore`)."""
        super().backup(path)
        return True

    def mktmp(  # type: ignore[override]  # pytest-mh's signature
        self,
        contents: str | None = None,
        *,
        mode: str | None = None,
        user: str | None = None,
        group: str | None = None,
        dedent: bool = True,
    ) -> str:
        """A temporary file with ``contents`` (removed after the test); returns its path."""
        path = super().mktmp()
        if contents is not None or mode or user or group:
            self.write(path, contents or "", mode=mode, user=user, group=group, dedent=dedent)
        return path

    def truncate(self, path: str, *, size: int = 0) -> None:
        """Cut ``path`` to ``size`` bytes (backed up first)."""
        super().backup(path)
        compat_conn(self.host).exec(["truncate", "--size", str(size), path])

    def sed(self, command: str, path: str, args: list[str] | None = None) -> None:
        """Edit ``path`` in place with ``sed -i`` (backed up first)."""
        super().backup(path)
        compat_conn(self.host).exec(["sed", *(args or []), "-i", command, path])

    def wc(
        self, file: str, *, lines: bool = False, words: bool = False, bytes: bool = False, chars: bool = False
    ) -> ProcessResult:
        """``wc`` of ``file`` with the chosen counts."""
        flags = [f for f, on in (("-l", lines), ("-w", words), ("-c", bytes), ("-m", chars)) if on]
        result: ProcessResult = compat_conn(self.host).exec(["wc", *flags, file])
        return result

    def diff(
        self,
        path1: str,
        path2: str,
        *,
        brief: bool = False,
        recursive: bool = False,
        ignore_case: bool = False,
        args: list[str] | None = None,
    ) -> ProcessResult:
        """``diff`` of two paths on the host (a non-zero exit code does not raise)."""
        flags = [f for f, on in (("--brief", brief), ("--recursive", recursive), ("--ignore-case", ignore_case)) if on]
        result: ProcessResult = compat_conn(self.host).exec(
            ["diff", *flags, *(args or []), path1, path2], raise_on_error=False
        )
        return result

    def append(self, path: str, contents: str, *, dedent: bool = True) -> bool:
        """Append ``contents`` to ``path`` (created when missing); undone after the test."""
        return super().append(path, textwrap.dedent(contents) if dedent else contents, dedent=False)
