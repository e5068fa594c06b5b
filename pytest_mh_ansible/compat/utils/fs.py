"""``pytest_mh.utils.fs``: ``LinuxFileSystem``, each change one command, each path saved once and restored."""

from __future__ import annotations

import shlex
from typing import Any

from ... import FileSystem
from ..conn import Connection, ProcessResult, compat_conn

__all__ = ["LinuxFileSystem"]

_MARK = "MH-COMPAT-SAVED:"


def _q(path: str) -> str:
    return shlex.quote(path)


def _save_script(path: str) -> str:
    """Copy ``path`` aside (or note that it is missing) and print where: one line, ``_MARK`` + dir or ``-``."""
    p = _q(path)
    return (
        f'if [ -e {p} ] || [ -L {p} ]; then t=$(mktemp -d /tmp/mh.fs.XXXXXXXXXX) && cp -a -- {p} "$t/data"'
        f' && echo "{_MARK}$t"; else echo "{_MARK}-"; fi'
    )


def _owner(path: str, mode: str | None, user: str | None, group: str | None) -> str:
    steps = []
    if mode is not None:
        steps.append(f"chmod {_q(str(mode))} {_q(path)}")
    if user is not None or group is not None:
        steps.append(f"chown {_q((user or '') + (':' + group if group else ''))} {_q(path)}")
    return "".join(f" && {step}" for step in steps)


class LinuxFileSystem(FileSystem):
    """pytest-mh's file system utility: every change is one command, undone after the test (or scope).

    Before its first change in a scope (the test, the topology setup, the session setup), a path is
    copied aside in the same command that changes it (``cp -a``), or noted as missing; the journal
    puts it back (or removes it) when the scope ends, as pytest-mh's utility does on exit. This
    costs one command per change instead of Ansible module calls; ``host.ansible`` and this
    project's :class:`~pytest_mh_ansible.FileSystem` methods (``stat``, ``wait_for_path``) stay
    available. ``read`` returns the text without its last newline, as pytest-mh's does.

    Example::

        class Client(MultihostRole[ClientHost]):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.fs = LinuxFileSystem(self.host)

        client.fs.write("/etc/sssd/sssd.conf", config, mode="0600")
    """

    def __init__(self, host: Any) -> None:
        super().__init__(host)
        self.artifacts: set[str] = set()

    @property
    def _conn(self) -> Connection:
        return compat_conn(self.host)

    # -- the one primitive: change a path, saving it first when this scope has not yet ---------------
    def _change(self, path: str, command: str, *, input: str | None = None) -> None:
        journal = self.host.journal
        key = f"compat.fs:{self.host.name}:{path}"
        if journal.recall(key) is not None:
            self._conn.run(command, input=input)
            return
        result = self._conn.run(f"{_save_script(path)}\n{command}", input=input)
        saved = next((line[len(_MARK) :] for line in result.stdout_lines if line.startswith(_MARK)), "-")
        journal.remember(key, saved)
        self._record(path, saved)

    def _record(self, path: str, saved: str) -> None:
        conn, p = self._conn, _q(path)
        if saved == "-":
            journal_text = f"{path} (created: removed after the scope)"

            def undo() -> None:
                conn.run(f"rm -rf -- {p}")

        else:
            journal_text = f"{path} (saved in {saved})"

            def undo() -> None:
                conn.run(f"rm -rf -- {p} && mv -- {_q(saved)}/data {p} && rm -rf -- {_q(saved)}")

        self.host.journal.record(self.host, journal_text, undo)

    # -- reading ---------------------------------------------------------------------------------------
    def read(self, path: str) -> str:
        """The text of ``path`` without its last newline (as pytest-mh's ``read``)."""
        return super().read(path).removesuffix("\n")

    # -- changes -----------------------------------------------------------------------------------------
    def _write_text(self, path: str, text: str, *, mode: str | None, user: str | None, group: str | None) -> bool:
        """``write``: a directory there is replaced; one command, undone after the test."""
        p = _q(path)
        self._change(path, f"{{ [ ! -d {p} ] || rm -rf -- {p}; }} && cat > {p}{_owner(path, mode, user, group)}",
                     input=text)  # fmt: skip
        return True

    def _append_text(self, path: str, text: str) -> bool:
        """``append``: one command, undone after the test."""
        self._change(path, f"cat >> {_q(path)}", input=text)
        return True

    def mkdir(self, path: str, *, mode: str | None = None, user: str | None = None, group: str | None = None) -> bool:
        """Create directory ``path`` (anything there first removed); removed after the test."""
        p = _q(path)
        self._change(path, f"rm -rf -- {p} && mkdir -- {p}{_owner(path, mode, user, group)}")
        return True

    def mkdir_p(self, path: str, *, mode: str | None = None, user: str | None = None, group: str | None = None) -> bool:
        """Create ``path`` and its missing parents; the topmost created one is removed after the test."""
        p = _q(path)
        top = self._conn.run(f'p={p}; top=""; while [ ! -e "$p" ]; do top=$p; p=$(dirname "$p"); done; echo "$top"')
        if top.stdout.strip():
            self._change(top.stdout.strip(), f"mkdir -p -- {p}{_owner(path, mode, user, group)}")
        else:
            self._conn.run(f"true{_owner(path, mode, user, group)}")
        return True

    def rm(self, path: str) -> bool:
        """Remove ``path`` (recursively); put back after the test."""
        self._change(path, f"rm -rf -- {_q(path)}")
        return True

    def touch(self, path: str, *, mode: str | None = None, user: str | None = None,
              group: str | None = None) -> bool:  # fmt: skip
        """Create ``path`` or update its times; undone after the test."""
        self._change(path, f"touch -- {_q(path)}{_owner(path, mode, user, group)}")
        return True

    def copy(self, src: str, dest: str, *, mode: str | None = None, user: str | None = None,
             group: str | None = None) -> bool:  # fmt: skip
        """Copy ``src`` to ``dest`` on the host (``cp -a``); ``dest`` restored after the test."""
        self._change(dest, f"cp -a -- {_q(src)} {_q(dest)}{_owner(dest, mode, user, group)}")
        return True

    def chmod(self, mode: str, path: str, args: list[str] | None = None) -> bool:
        """``chmod [args] mode path``; the old mode is back after the test."""
        self._change(path, shlex.join(["chmod", *(args or []), mode, path]))
        return True

    def chown(self, path: str, user: str | None = None, group: str | None = None,
              args: list[str] | None = None) -> bool:  # fmt: skip
        """``chown [args] user:group path``; the old owner is back after the test."""
        owner = (user or "") + (":" + group if group else "")
        self._change(path, shlex.join(["chown", *(args or []), owner, path]))
        return True

    def truncate(self, path: str, *, size: int = 0) -> None:
        """Cut ``path`` to ``size`` bytes; undone after the test."""
        self._change(path, shlex.join(["truncate", "--size", str(size), path]))

    def sed(self, command: str, path: str, args: list[str] | None = None) -> None:
        """Edit ``path`` in place with ``sed -i``; undone after the test."""
        self._change(path, shlex.join(["sed", *(args or []), "-i", command, path]))

    def upload(self, local: str, remote: str, *, mode: str | None = None, user: str | None = None,
               group: str | None = None) -> bool:  # fmt: skip
        """Copy ``local`` (on the controller) to ``remote``; undone after the test."""
        self._change(remote, "true")
        self.host.conn.put(local, remote)
        if mode or user or group:
            self._conn.run(f"true{_owner(remote, mode, user, group)}")
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
        text = "" if contents is None else self._as_written(contents, dedent)
        result = self._conn.run('t=$(mktemp /tmp/mh.fs.tmp.XXXXXXXXXX) && cat > "$t" && echo "$t"', input=text)
        path = result.stdout.strip()
        self.host.journal.remember(f"compat.fs:{self.host.name}:{path}", "-")
        self._record(path, "-")
        if mode or user or group:
            self._conn.run(f"true{_owner(path, mode, user, group)}")
        return path

    # -- explicit backups (pytest-mh's names) -------------------------------------------------------------
    def backup(self, path: str) -> bool:  # type: ignore[override]  # pytest-mh returns True
        """Save ``path`` now (if this scope has not yet); it is put back when the scope ends."""
        self._change(path, "true")
        return True

    def restore(self, path: str) -> bool:  # type: ignore[override]
        """Put ``path`` back now as it was saved in this scope; False when it was not saved."""
        saved = self.host.journal.recall(f"compat.fs:{self.host.name}:{path}")
        if saved is None:
            return False
        p = _q(path)
        if saved == "-":
            self._conn.run(f"rm -rf -- {p}")
        else:
            self._conn.run(f"rm -rf -- {p} && cp -a -- {_q(str(saved))}/data {p}")
        return True

    # -- pytest-mh's read-only helpers -----------------------------------------------------------------
    def wc(self, file: str, *, lines: bool = False, words: bool = False, bytes: bool = False,
           chars: bool = False) -> ProcessResult:  # fmt: skip
        """``wc`` of ``file`` with the chosen counts."""
        flags = [f for f, on in (("-l", lines), ("-w", words), ("-c", bytes), ("-m", chars)) if on]
        return self._conn.exec(["wc", *flags, file])

    def diff(self, path1: str, path2: str, *, brief: bool = False, recursive: bool = False,
             ignore_case: bool = False, args: list[str] | None = None) -> ProcessResult:  # fmt: skip
        """``diff`` of two paths on the host (a non-zero exit code does not raise)."""
        flags = [f for f, on in (("--brief", brief), ("--recursive", recursive), ("--ignore-case", ignore_case)) if on]
        return self._conn.exec(["diff", *flags, *(args or []), path1, path2], raise_on_error=False)
