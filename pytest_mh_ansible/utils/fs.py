"""Files and directories: read, write, copy, chmod..., every change reverted."""

from __future__ import annotations

import itertools
import shlex
import textwrap
from typing import TYPE_CHECKING, Any

from .._private.rollback import snapshots
from ..errors import MultihostError
from ..utility import MultihostUtility
from ._calls import run_module

if TYPE_CHECKING:
    from ..host import MultihostHost

__all__ = ["FileSystem"]

_backups = itertools.count(1)
# Content is sent inline and the journal's snapshot is taken in the same module call: one module on the
# host instead of copy's stat module, temp dir, file transfer and copy module, plus a snapshot module.
_WRITE = "mh_ansible.rollback.write"


class FileSystem(MultihostUtility["MultihostHost"]):
    """Files and directories through Ansible modules; every change is undone at the end of its scope.

    Changes go through ``host.ansible`` (``mh_ansible.rollback.write`` for content, ``file``, ``copy``),
    so the rollback journal snapshots each path before its first change and restores content, mode,
    owner and existence after the test (after the topology for changes in ``topology_setup``; at the
    end of the session for ``pytest_setup``).

    Example::

        def test_app_reads_config(server):
            server.fs.write("/etc/app.conf", '''
                [main]
                port = 8080
            ''', mode="0640")
            assert "8080" in server.fs.read("/etc/app.conf")
            tmp = server.fs.mktmp(directory=True)      # removed after the test
            server.fs.rm("/etc/app.d")                  # recreated after the test
    """

    def __init__(self, host: MultihostHost) -> None:
        super().__init__(host)
        self._snapshots: dict[str, list[str]] = {}

    def _run(self, module: str, **kwargs: Any) -> bool:
        return run_module(self.host, module, **kwargs)

    # -- reading ------------------------------------------------------------------------------
    def read(self, path: str) -> str:
        """The text of ``path`` (``cat`` over the connection: reading changes nothing).

        :raises ProcessError: The file cannot be read.
        """
        return self.host.conn.run(f"cat -- {shlex.quote(path)}").stdout

    def exists(self, path: str) -> bool:
        """True when ``path`` exists (a dangling symlink counts)."""
        quoted = shlex.quote(path)
        return self.host.conn.run(f"test -e {quoted} || test -L {quoted}", raise_on_error=False).rc == 0

    def stat(self, path: str) -> dict[str, Any]:
        """``ansible.builtin.stat`` of ``path``: ``exists``, ``mode``, ``pw_name``, ``gr_name``, ``size``...

        :returns: The module's ``stat`` dict (``{"exists": False}`` for a missing path).
        """
        result = self.host.ansible.run("ansible.builtin.stat", path=path, get_checksum=False)
        return dict(result.raw.get("stat") or {"exists": False})

    def download(self, remote: str, local: str) -> None:
        """Copy ``remote`` from the host to ``local`` on the controller."""
        self.host.conn.get(remote, local)

    # -- writing --------------------------------------------------------------------------------
    @staticmethod
    def _as_written(contents: str, dedent: bool) -> str:
        """``contents`` as written: without common indentation and a leading newline if ``dedent``."""
        return textwrap.dedent(contents).lstrip("\n") if dedent else contents

    def write(
        self,
        path: str,
        contents: str,
        *,
        mode: str | None = None,
        user: str | None = None,
        group: str | None = None,
        dedent: bool = True,
    ) -> bool:
        """Write ``contents`` to ``path`` (created or replaced); undone after the test.

        :param dedent: Remove the common indentation and a leading newline (for triple-quoted text).
        :returns: True when the file changed.
        """
        return self._write_text(path, self._as_written(contents, dedent), mode=mode, user=user, group=group)

    def _write_text(self, path: str, text: str, *, mode: str | None, user: str | None, group: str | None) -> bool:
        """The change of :meth:`write`, its text final: what a file system that writes its own way overrides."""
        return self._run(_WRITE, dest=path, content=text, mode=mode, owner=user, group=group)

    def append(self, path: str, contents: str, *, dedent: bool = True) -> bool:
        """Append ``contents`` to ``path`` (created when missing); undone after the test."""
        return self._append_text(path, self._as_written(contents, dedent))

    def _append_text(self, path: str, text: str) -> bool:
        """The change of :meth:`append`, its text final (see :meth:`_write_text`)."""
        # The sentinel keeps the file's last newline whatever a connection does with trailing newlines.
        old = self.host.conn.run(f"cat -- {shlex.quote(path)} && echo .", raise_on_error=False)
        current = old.stdout.rstrip("\n")[:-1] if old.rc == 0 else ""
        return self._run(_WRITE, dest=path, content=current + text)

    def mkdir(self, path: str, *, mode: str | None = None, user: str | None = None, group: str | None = None) -> bool:
        """Create the directory ``path`` (its parent must exist); removed after the test.

        :raises MultihostError: The parent directory does not exist.
        """
        parent = path.rstrip("/").rsplit("/", 1)[0] or "/"
        if not self.exists(parent):
            raise MultihostError(f"{self.host.name}: cannot create {path!r}: parent {parent!r} does not exist")
        return self.mkdir_p(path, mode=mode, user=user, group=group)

    def mkdir_p(self, path: str, *, mode: str | None = None, user: str | None = None, group: str | None = None) -> bool:
        """Create ``path`` with its missing parents; all of them are removed after the test."""
        return self._run("ansible.builtin.file", path=path, state="directory", mode=mode, owner=user, group=group)

    def mktmp(self, *, directory: bool = False) -> str:
        """Create a temporary file (or directory) on the host; removed after the test.

        :returns: Its path.
        """
        host = self.host
        # mktemp is one round trip; its inverse goes in the journal like a module's would.
        path = host.conn.run(f"mktemp {'-d ' if directory else ''}/tmp/mh.XXXXXXXXXX").stdout.strip()

        def undo() -> None:
            host.conn.run(f"rm -rf -- {shlex.quote(path)}")

        host.journal.record(host, f"temporary {'directory' if directory else 'file'} {path}", undo)
        return path

    def rm(self, path: str) -> bool:
        """Remove ``path`` (a directory recursively); recreated after the test."""
        return self._run("ansible.builtin.file", path=path, state="absent")

    def touch(self, path: str) -> bool:
        """Create ``path`` if missing (else update its times); removed after the test if it was created."""
        return self._run(
            "ansible.builtin.file", path=path, state="touch", modification_time="preserve", access_time="preserve"
        )

    def copy(self, src: str, dest: str) -> bool:
        """Copy the file ``src`` to ``dest``, both on the host; ``dest`` restored after the test."""
        return self._run("ansible.builtin.copy", src=src, dest=dest, remote_src=True)

    def chmod(self, mode: str, path: str) -> bool:
        """Set the mode of ``path`` (``"0640"``, ``"u+x"``); the old mode is back after the test."""
        return self._run("ansible.builtin.file", path=path, mode=mode)

    def chown(self, path: str, user: str | None = None, group: str | None = None) -> bool:
        """Set the owner and/or group of ``path``; the old ones are back after the test."""
        return self._run("ansible.builtin.file", path=path, owner=user, group=group)

    def upload(self, local: str, remote: str, *, mode: str | None = None) -> bool:
        """Copy ``local`` (on the controller) to ``remote`` on the host; undone after the test."""
        return self._run("ansible.builtin.copy", src=local, dest=remote, mode=mode)

    # -- explicit backups -------------------------------------------------------------------------
    def backup(self, path: str) -> None:
        """Snapshot ``path`` now; :meth:`restore` puts it back, and the end of the scope does if you do not.

        Useful before raw commands (``host.conn.run``) that change the path behind the journal's back.
        """
        name = f"mh-fs-backup-{next(_backups)}"
        snapshots.take(self.host, [path], name)
        self._snapshots.setdefault(path, []).append(name)
        host, backups = self.host, self._snapshots

        def undo() -> None:
            if name in backups.get(path, []):
                backups[path].remove(name)
                snapshots.restore(host, name)

        self.host.journal.record(self.host, f"backup of {path}", undo)

    def restore(self, path: str) -> None:
        """Put ``path`` back as the last :meth:`backup` of it found it, and drop that backup.

        :raises MultihostError: ``path`` has no backup.
        """
        names = self._snapshots.get(path)
        if not names:
            raise MultihostError(f"{self.host.name}: no backup of {path!r} to restore (call fs.backup first)")
        name = names.pop()
        snapshots.restore(self.host, name)

    # -- waiting --------------------------------------------------------------------------------
    def wait_for_path(self, path: str, *, timeout: int = 30, state: str = "present") -> None:
        """Wait until ``path`` exists (or, with ``state="absent"``, is gone).

        :raises ModuleError: It did not happen within ``timeout`` seconds.
        """
        self.host.ansible.run("ansible.builtin.wait_for", path=path, state=state, timeout=timeout)
