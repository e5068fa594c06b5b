"""``pytest_mh.utils.fs``: ``LinuxFileSystem`` and ``StatEntry``; each change one command, each path saved once."""

from __future__ import annotations

import base64
import shlex
import textwrap
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from ... import FileSystem
from ..conn import HostConnection, ProcessLogLevel, ProcessResult, compat_conn
from ..utility import MultihostReentrantUtility
from ._stat import StatEntry

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["LinuxFileSystem", "StatEntry"]

_GLOB = frozenset("*?[]")
_QUIET = ProcessLogLevel.Error
_MISSING = "-"  # a path known not to exist before (a temporary file): its undo removes it


def _q(path: str) -> str:
    return shlex.quote(path)


def _glob_word(pattern: str) -> str:
    """``pattern`` as one shell word whose ``*``, ``?`` and ``[...]`` still expand and nothing else does."""
    parts: list[str] = []
    plain = ""
    for char in pattern:
        if char in _GLOB:
            parts.extend([_q(plain)] if plain else [])
            parts.append(char)
            plain = ""
        else:
            plain += char
    parts.extend([_q(plain)] if plain else [])
    return "".join(parts)


def _save_script(path: str, saved: str) -> str:
    """Make the directory ``saved`` and copy ``path`` into it as ``data`` if it exists; fails if ``saved`` exists."""
    p = _q(path)
    return f"mkdir -m 700 -- {_q(saved)} && {{ if [ -e {p} ] || [ -L {p} ]; then cp -a -- {p} {_q(saved)}/data; fi; }}"


def _had_data(saved: str) -> str:
    return f"{{ [ -e {_q(saved)}/data ] || [ -L {_q(saved)}/data ]; }}"


def _restore_command(path: str, saved: str, *, keep: bool = False) -> str:
    """Put ``path`` back from ``saved`` (removed if it did not exist then); nothing if the save never happened.

    With ``keep`` the saved copy stays (``restore``), else it is moved back and its directory removed.
    """
    p = _q(path)
    if saved == _MISSING:
        return f"rm -rf -- {p}"
    back = f"cp -a -- {_q(saved)}/data {p}" if keep else f"mv -- {_q(saved)}/data {p}"
    done = "" if keep else f"; rm -rf -- {_q(saved)}"
    return f"if [ -d {_q(saved)} ]; then rm -rf -- {p}; if {_had_data(saved)}; then {back}; fi{done}; fi"


def _owner_of(word: str, mode: str | None, user: str | None, group: str | None) -> str:
    """`` && chmod ... && chown ...`` for the shell word ``word`` (already quoted or a variable)."""
    steps = []
    if mode is not None:
        steps.append(f"chmod {_q(str(mode))} {word}")
    if user is not None or group is not None:
        steps.append(f"chown {_q((user or '') + (':' + group if group else ''))} {word}")
    return "".join(f" && {step}" for step in steps)


def _owner(path: str, mode: str | None, user: str | None, group: str | None) -> str:
    return _owner_of(_q(path), mode, user, group)


@dataclass(eq=False)
class _Undo:
    """One saved path's way back; run once, by its ``with`` block's exit or by the journal, whichever comes first."""

    path: str
    saved: str
    conn: HostConnection
    done: bool = False

    @property
    def command(self) -> str:
        return _restore_command(self.path, self.saved)

    def __call__(self) -> None:
        if not self.done:
            self.conn.run(self.command, log_level=_QUIET)
            self.done = True


@dataclass
class _Frame:
    """The paths saved since one ``__enter__``: put back by the matching ``__exit__``."""

    saved: dict[str, _Undo] = field(default_factory=dict)
    undos: list[_Undo] = field(default_factory=list)


class LinuxFileSystem(MultihostReentrantUtility[Any], FileSystem):
    """pytest-mh's file system utility: every change is one command, undone after the test (or scope).

    Before its first change in a state, a path is copied aside in the same command that changes it
    (``cp -a``), or noted as missing, and put back (or removed) when that state ends: at the end of
    the test for a role's utility (entered at setup, exited at teardown, as in pytest-mh), at the
    end of a ``with fs:`` block for changes made inside it, and at the end of the scope (test,
    topology setup, session setup) through the rollback journal for a utility that was never
    entered. The journal is also the backstop: whatever an exit did not put back, the end of the
    scope does. ``host.ansible`` and this project's :class:`~pytest_mh_ansible.FileSystem` methods
    (``wait_for_path``) stay available. ``read`` returns the text without its last newline, as
    pytest-mh's does.

    Example::

        class Client(MultihostRole[ClientHost]):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.fs = LinuxFileSystem(self.host)

        client.fs.write("/etc/sssd/sssd.conf", config, mode="0600")
        with client.fs:
            client.fs.rm("/etc/sssd/sssd.conf")      # back when the block ends
        assert client.fs.stat("/etc/sssd/sssd.conf").access == "0600"
    """

    def __init__(self, host: Any) -> None:
        super().__init__(host)
        self._frames: list[_Frame] = []

    @property
    def _conn(self) -> HostConnection:
        return compat_conn(self.host)

    # -- states ---------------------------------------------------------------------------------------
    def __enter__(self) -> Self:
        """Start a new state: paths changed from now on are put back as they are now by :meth:`__exit__`."""
        self._frames.append(_Frame())
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        """Put back every path changed since the matching :meth:`__enter__`, newest change first, in one command."""
        if not self._frames:
            return
        frame = self._frames.pop()
        undos = [undo for undo in reversed(frame.undos) if not undo.done]
        if not undos:
            return
        self.logger.info(f"Reverting file system changes: {', '.join(sorted(u.path for u in undos))}")
        script = "rc=0\n" + "".join(f"{{ {undo.command}; }} || rc=1\n" for undo in undos) + "exit $rc"
        self._conn.run(script, log_level=_QUIET)
        for undo in undos:
            undo.done = True

    def _saved(self, path: str) -> str | None:
        """How ``path`` is saved in the current state (a directory or ``-``), or None when it is not.

        A save whose undo has run already (the journal's scope ended inside a longer state, such as
        a test inside a state entered for the session) does not count: the next change saves again.
        """
        undo = self._frames[-1].saved.get(path) if self._frames else self.host.journal.recall(self._key(path))
        return undo.saved if isinstance(undo, _Undo) and not undo.done else None

    def _key(self, path: str) -> str:
        return f"compat.fs:{self.host.name}:{path}"

    # -- the one primitive: change a path, saving it first when this state has not yet -----------------
    def _change(self, path: str, command: str, *, input: str | None = None) -> ProcessResult:
        """Run ``command``, which changes ``path``; the first change in a state saves ``path`` in the same command.

        The undo is recorded before the command runs (it does nothing if the save did not happen),
        so a command that fails halfway is undone too.
        """
        if self._saved(path) is not None:
            return self._conn.run(command, input=input, log_level=_QUIET)
        saved = self._record(path, f"/tmp/mh.fs.{uuid.uuid4().hex[:16]}")
        return self._conn.run(f"{_save_script(path, saved)} || exit 1\n{command}", input=input, log_level=_QUIET)

    def _record(self, path: str, saved: str) -> str:
        """Note that ``path`` is saved in ``saved`` (or ``-``: created here) in this state; returns ``saved``."""
        undo = _Undo(path, saved, self._conn)
        if self._frames:
            self._frames[-1].saved[path] = undo
            self._frames[-1].undos.append(undo)
        else:
            self.host.journal.remember(self._key(path), undo)
        what = f"{path} (created: removed after the scope)" if saved == _MISSING else f"{path} (saved in {saved})"
        self.host.journal.record(self.host, what, undo)
        return saved

    # -- reading ---------------------------------------------------------------------------------------
    def read(self, path: str) -> str:
        """The text of ``path`` as pytest-mh's ``cat`` gives it: its lines joined, without the last newline."""
        self.logger.info(f'Reading file "{path}"')
        return self._conn.exec(["cat", path], log_level=_QUIET).stdout

    @staticmethod
    def _as_written(contents: str, dedent: bool) -> str:
        """pytest-mh's ``dedent``: the common indentation removed and the text stripped at both ends."""
        return textwrap.dedent(contents).strip() if dedent else contents

    def exists(self, path: str) -> bool:
        """True when ``path`` exists (a dangling symbolic link counts)."""
        return FileSystem.exists(self, path)

    def stat(self, path: str) -> StatEntry:  # type: ignore[override]  # pytest-mh's result
        """``stat`` of ``path`` as a :class:`StatEntry` (mode, owner, size, times...).

        :raises ProcessError: ``path`` does not exist.
        """
        self.logger.info(f'Getting file status for "{path}"')
        return StatEntry.FromOutput(self._conn.run(f"LC_ALL=C stat -- {_q(path)}", log_level=_QUIET).stdout)

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
        """Write ``contents`` to ``path`` (a directory there is replaced); undone after the test."""
        self.logger.info(f'Writing file "{path}"')
        return FileSystem.write(self, path, contents, mode=mode, user=user, group=group, dedent=dedent)

    def append(self, path: str, contents: str, *, dedent: bool = True) -> bool:
        """Append ``contents`` to ``path`` (created when missing); undone after the test."""
        self.logger.info(f'Appending to file "{path}"')
        return FileSystem.append(self, path, contents, dedent=dedent)

    def mkdir(self, path: str, *, mode: str | None = None, user: str | None = None, group: str | None = None) -> bool:
        """Create directory ``path`` (anything there first removed); removed after the test."""
        p = _q(path)
        self._change(path, f"rm -rf -- {p} && mkdir -- {p}{_owner(path, mode, user, group)}")
        return True

    def mkdir_p(self, path: str, *, mode: str | None = None, user: str | None = None, group: str | None = None) -> bool:
        """Create ``path`` and its missing parents, as an empty directory (anything there is removed first, as in
        pytest-mh); the topmost created directory, or ``path`` as it was, is put back after the test."""
        p = _q(path)
        top = self._conn.run(f'p={p}; top=""; while [ ! -e "$p" ]; do top=$p; p=$(dirname "$p"); done; echo "$top"',
                             log_level=_QUIET).stdout.strip()  # fmt: skip
        make = f"mkdir -p -- {p}{_owner(path, mode, user, group)}"
        if top:
            self._change(top, make)
        else:
            self._change(path, f"rm -rf -- {p} && {make}")
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

    def copy(  # pytest-mh's parameter names
        self, srcpath: str, dstpath: str, *, mode: str | None = None, user: str | None = None, group: str | None = None
    ) -> bool:
        """Copy ``srcpath`` to ``dstpath`` on the host (``cp -a``); ``dstpath`` is put back after the test."""
        self.logger.info(f'Copying file "{srcpath}" to "{dstpath}"')
        self._change(dstpath, f"cp -a -- {_q(srcpath)} {_q(dstpath)}{_owner(dstpath, mode, user, group)}")
        return True

    def chmod(self, mode: str, path: str, args: list[str] | None = None) -> ProcessResult:  # type: ignore[override]
        """``chmod [args] mode path``; the old mode is back after the test."""
        return self._change(path, shlex.join(["chmod", *(args or []), mode, path]))

    def chown(  # type: ignore[override]  # pytest-mh's result
        self, path: str, user: str | None = None, group: str | None = None, args: list[str] | None = None
    ) -> ProcessResult:
        """``chown [args] user:group path``; the old owner is back after the test."""
        owner = (user or "") + (":" + group if group else "")
        return self._change(path, shlex.join(["chown", *(args or []), owner, path]))

    def truncate(self, path: str, *, size: int = 0) -> None:
        """Cut ``path`` to ``size`` bytes; undone after the test."""
        self._change(path, shlex.join(["truncate", "--size", str(size), path]))

    def sed(self, command: str, path: str, args: list[str] | None = None) -> ProcessResult:
        """``sed [args] command path`` after saving ``path``: as in pytest-mh, it edits in place only with ``-i`` in
        ``args`` (undone after the test); without it the result's ``stdout`` is the edited text."""
        return self._change(path, shlex.join(["sed", *(args or []), command, path]))

    def upload(  # pytest-mh's parameter names
        self,
        local_path: str,
        remote_path: str,
        *,
        mode: str | None = None,
        user: str | None = None,
        group: str | None = None,
    ) -> bool:
        """Copy ``local_path`` (on the controller) to ``remote_path`` (a directory there is replaced); undone after the
        test."""
        self.logger.info(f'Uploading file "{local_path}" to "{self.host.name}:{remote_path}"')
        p = _q(remote_path)
        self._change(remote_path, f"[ ! -d {p} ] || rm -rf -- {p}")
        self._put(local_path, remote_path, mode=mode, user=user, group=group)
        return True

    def upload_to_tmp(
        self, local_path: str, *, mode: str | None = None, user: str | None = None, group: str | None = None
    ) -> str:
        """Copy ``local_path`` (on the controller) to a new temporary file on the host, removed after the test.

        :returns: The temporary file's path.
        """
        path = self.mktmp()
        self.logger.info(f'Uploading file "{local_path}" to "{self.host.name}:{path}"')
        self._put(local_path, path, mode=mode, user=user, group=group)
        return path

    def _put(self, local_path: str, remote_path: str, *, mode: str | None, user: str | None, group: str | None) -> None:
        """Send the file's bytes through the shell (base64, as pytest-mh), with its mode and owner, in one command."""
        data = base64.b64encode(Path(local_path).read_bytes()).decode()
        p = _q(remote_path)
        self._conn.run(f"base64 --decode > {p}{_owner(remote_path, mode, user, group)}", input=data, log_level=_QUIET)

    def download(self, remote_path: str, local_path: str) -> None:
        """Copy ``remote_path`` from the host to ``local_path`` on the controller."""
        self.logger.info(f'Downloading file "{self.host.name}:{remote_path}" to "{local_path}"')
        out = self._conn.run(f"base64 -- {_q(remote_path)}", log_level=_QUIET).stdout
        Path(local_path).write_bytes(base64.b64decode(out))

    def download_files(self, paths: list[str], local_path: str) -> None:
        """Fetch ``paths`` (glob patterns allowed) into one gzipped tarball at ``local_path`` on the controller.

        Members are named without the leading ``/`` (``etc/hostname``); patterns that match nothing
        are left out, and with no match at all the tarball is empty.
        """
        self.logger.info(f'Downloading files from {self.host.name} to "{local_path}": {", ".join(paths)}')
        collect = "".join(f'for f in {_glob_word(p)}; do [ -e "$f" ] && set -- "$@" "$f"; done\n' for p in paths)
        script = f'set --\n{collect}tar -czf - -T /dev/null "$@" 2>/dev/null | base64'
        out = self._conn.run(script, log_level=_QUIET).stdout
        Path(local_path).write_bytes(base64.b64decode(out))

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
        self.logger.info("Creating temporary file")
        text = "" if contents is None else self._as_written(contents, dedent)
        owner = _owner_of('"$t"', mode, user, group)
        path = self._conn.run(
            f't=$(mktemp /tmp/mh.fs.tmp.XXXXXXXXXX) && cat > "$t"{owner} && echo "$t"',
            input=text,
            log_level=_QUIET,
        ).stdout.strip()
        self._record(path, _MISSING)
        return path

    # -- explicit backups (pytest-mh's names) -------------------------------------------------------------
    def backup(self, path: str) -> bool:  # type: ignore[override]  # pytest-mh's result
        """Save ``path`` now (if this state has not yet); it is put back when the state ends.

        :returns: False when ``path`` did not exist when it was saved (it is then removed when the
            state ends), else True (also when it was saved already, as in pytest-mh).
        """
        if self._saved(path) is not None:
            return True
        self.logger.info(f'Creating a backup of "{path}"')
        saved = self._record(path, f"/tmp/mh.fs.{uuid.uuid4().hex[:16]}")
        self._conn.run(_save_script(path, saved), log_level=_QUIET)
        return self._conn.run(_had_data(saved), log_level=_QUIET, raise_on_error=False).rc == 0

    def restore(self, path: str) -> bool:  # type: ignore[override]  # pytest-mh's result
        """Put ``path`` back now as it was saved in this state (it is saved still); False when it was not saved."""
        saved = self._saved(path)
        if saved is None:
            return False
        self.logger.info(f'Restoring "{path}" from backup')
        self._conn.run(_restore_command(path, saved, keep=True), log_level=_QUIET)
        return True

    # -- pytest-mh's read-only helpers -----------------------------------------------------------------
    def wc(self, file: str, lines: bool = False, word: bool = False, bytes: bool = False,
           chars: bool = False) -> ProcessResult:  # fmt: skip
        """``wc`` of ``file`` with the chosen counts (``-l``, ``-w``, ``-c``, ``-m``; all three without any)."""
        flags = [f for f, on in (("-l", lines), ("-w", word), ("-c", bytes), ("-m", chars)) if on]
        return self._conn.exec(["wc", *flags, file], log_level=_QUIET)

    def diff(self, path1: str, path2: str, *, brief: bool = False, recursive: bool = False,
             ignore_case: bool = False, args: list[str] | None = None) -> ProcessResult:  # fmt: skip
        """``diff`` of two paths on the host (a non-zero exit code does not raise)."""
        flags = [f for f, on in (("--brief", brief), ("--recursive", recursive), ("--ignore-case", ignore_case)) if on]
        return self._conn.exec(["diff", *(args or []), *flags, path1, path2], raise_on_error=False)
