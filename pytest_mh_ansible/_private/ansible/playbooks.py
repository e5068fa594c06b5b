"""Running playbooks against the session's inventory with ansible-runner, limited to chosen hosts."""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from ...errors import MultihostError, PlaybookError
from ...playbook import PlaybookHostStats, PlaybookOptions, PlaybookResult, TaskResult
from ..secrets import secrets
from .collection import collections_dir

if TYPE_CHECKING:
    from ...host import MultihostHost
    from ..rollback.inverses import JournalRecorder

__all__ = ["PlaybookRunner"]

log = logging.getLogger("pytest_mh_ansible.playbook")


@dataclass(frozen=True)
class PlaybookRunner:
    """Runs playbooks with the inventory sources and vault files of the session.

    A playbook runs in an ``ansible-playbook`` process started by ansible-runner: playbooks
    are coarse operations (seconds), and a process keeps their global Ansible state, forks
    and signal handlers out of pytest.
    """

    sources: tuple[str, ...]
    vault_password_files: tuple[str, ...] = ()
    search_dirs: tuple[str, ...] = ()
    recorder: JournalRecorder | None = None
    vault_ids: tuple[str, ...] = ()  # ``label@file``, as ansible-playbook's --vault-id (files absolute)

    def resolve(self, path: str) -> Path:
        """An absolute playbook path: as given, else against each search dir (rootdir, mh_playbook_dir)."""
        candidate = Path(path)
        if candidate.is_absolute():
            if candidate.is_file():
                return candidate
            raise MultihostError(f"playbook {path!r} not found")
        for base in self.search_dirs:
            full = Path(base) / candidate
            if full.is_file():
                return full.resolve()
        where = ", ".join(self.search_dirs) or "."
        raise MultihostError(f"playbook {path!r} not found (looked in {where})")

    def run_reverted(
        self, path: str, hosts: Sequence[MultihostHost], **options: Unpack[PlaybookOptions]
    ) -> PlaybookResult:
        """Run a playbook on ``hosts`` and record how to undo what it changed.

        A playbook's tasks are opaque to the journal: the caller names the paths it changes
        (``revert_paths``: snapshot before, restore after the scope) and/or a ``teardown``
        playbook (run at the end of the scope). A change covered by neither is logged as not
        reverted, for the host backup (or the drift check) to catch.

        :param raise_on_error: Raise :class:`~pytest_mh_ansible.errors.PlaybookError` when the
            playbook fails or cannot be run; None means yes, except in check mode.
        :raises PlaybookError: See ``raise_on_error``; the undo of what changed is recorded first.
        """
        unknown = sorted(set(options) - PlaybookOptions.__optional_keys__)
        if unknown:
            known = ", ".join(sorted(PlaybookOptions.__optional_keys__))
            raise TypeError(f"playbook({path!r}): unknown keyword(s) {', '.join(unknown)}; the keywords are {known}")
        check = options.get("check", False)
        raise_on_error = options.get("raise_on_error")
        result = self._run_recorded(path, hosts, options)
        if (not check if raise_on_error is None else raise_on_error) and not result.ok:
            raise PlaybookError(path, [host.name for host in hosts], failure_message(result), result)
        return result

    def _run_recorded(self, path: str, hosts: Sequence[MultihostHost], options: PlaybookOptions) -> PlaybookResult:
        extra_vars, tags, skip_tags = options.get("extra_vars"), options.get("tags"), options.get("skip_tags")
        check, become = options.get("check", False), options.get("become")
        revert_paths, teardown = options.get("revert_paths"), options.get("teardown")
        recorder = None if check else self.recorder
        if teardown is not None:
            self.resolve(teardown)  # a wrong teardown path is an error now, not at the end of the scope
        finishes = (
            [(host, recorder.protect_paths(host, revert_paths)) for host in hosts]
            if (recorder is not None and revert_paths)
            else []
        )
        try:
            result = self.run(
                path,
                [host.name for host in hosts],
                extra_vars=extra_vars,
                tags=tags,
                skip_tags=skip_tags,
                check=check,
                become=become,
            )
        except BaseException:
            for _, finish in finishes:
                finish(False, "")
            raise
        if recorder is None:
            return result
        recorder.journal.log_call(
            ",".join(host.name for host in hosts),
            "playbook",
            str(self.resolve(path)),
            {"extra_vars": dict(extra_vars or {}), "tags": list(tags or []), "skip_tags": list(skip_tags or [])},
            become=become,
        )
        changed = {task.host for task in result.changed_tasks}
        for host, finish in finishes:
            finish(host.name in changed, f"playbook {path} (revert_paths: {', '.join(revert_paths or [])})")
        touched = [host for host in hosts if host.name in changed]
        if teardown is not None and touched:
            names = [host.name for host in touched]

            def undo() -> None:
                outcome = self.run(teardown, names, extra_vars=extra_vars, become=become)
                recorder.journal.log_call(
                    ",".join(names),
                    "playbook",
                    str(self.resolve(teardown)),
                    {"extra_vars": dict(extra_vars or {}), "tags": [], "skip_tags": []},
                    become=become,
                )
                if not outcome.ok:
                    failed = (
                        "; ".join(f"{t.host}: {t.task}: {t.msg}" for t in outcome.failed_tasks) or f"rc {outcome.rc}"
                    )
                    raise MultihostError(f"teardown playbook {teardown} failed: {failed}")

            recorder.journal.record(",".join(names), f"playbook {path} (teardown playbook {teardown})", undo)
        elif not revert_paths:
            for host in touched:
                count = sum(1 for task in result.changed_tasks if task.host == host.name)
                recorder.journal.note(
                    host,
                    f"not reverted: playbook {path} changed {count} task(s); name "
                    "revert_paths=[...] or teardown=... (or use a host backup)",
                )
        return result

    def run(
        self,
        path: str,
        hosts: Sequence[str],
        *,
        extra_vars: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        skip_tags: Sequence[str] | None = None,
        check: bool = False,
        become: bool | None = None,
    ) -> PlaybookResult:
        """Run a playbook limited to ``hosts`` (names); nothing is recorded (see :meth:`run_reverted`)."""
        import ansible_runner

        playbook = self.resolve(path)
        cmdline: list[str] = []
        for vault_id in self.vault_ids:
            cmdline += ["--vault-id", vault_id]
        for vault_file in self.vault_password_files:
            cmdline += ["--vault-password-file", str(Path(vault_file).resolve())]
        if check:
            cmdline.append("--check")
        if become is True:
            cmdline.append("--become")
        env = {
            "ANSIBLE_COLLECTIONS_PATH": os.pathsep.join(_collections_paths()),
            "ANSIBLE_ROLES_PATH": str(playbook.parent / "roles"),
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
            "ANSIBLE_NOCOLOR": "True",
        }
        bindir = os.path.dirname(sys.executable)
        env["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
        private = tempfile.mkdtemp(prefix="mh-playbook-")
        # Own ssh multiplexing sockets: the session's connections never share a master with the playbook.
        env["ANSIBLE_SSH_CONTROL_PATH_DIR"] = os.path.join(private, "cp")
        # Secret-named extra vars and the vault values of the playbook's own vars files are secrets like
        # the inventory's: masked in the playbook's output too.
        secrets.add_from_vars(extra_vars or {})
        from .vault import register_playbook_vault_values  # imports ansible: not before a playbook runs

        register_playbook_vault_values(str(playbook.parent))
        shown = secrets.mask_data(dict(extra_vars or {}), values=True)
        log.info("playbook %s on %s (extra vars: %s)", playbook, ", ".join(hosts), shown)
        try:
            runner = ansible_runner.run(
                private_data_dir=private,
                playbook=str(playbook),
                inventory=[str(Path(s).resolve()) if os.path.exists(s) else s for s in self.sources],
                limit=",".join(hosts),
                extravars=dict(extra_vars or {}),
                tags=",".join(tags) if tags else None,
                skip_tags=",".join(skip_tags) if skip_tags else None,
                cmdline=shlex.join(cmdline) or None,
                envvars=env,
                quiet=True,
                suppress_env_files=True,
                json_mode=False,
            )
            changed: list[TaskResult] = []
            failed: list[TaskResult] = []
            for event in runner.events:
                kind = event.get("event")
                if kind not in ("runner_on_ok", "runner_on_failed", "runner_on_unreachable"):
                    continue
                data = event.get("event_data", {})
                res = data.get("res") or {}
                is_failed = kind != "runner_on_ok" and not data.get("ignore_errors")
                task = TaskResult(
                    host=str(data.get("host", "")),
                    task=str(data.get("task", "")),
                    action=str(data.get("task_action", "")),
                    changed=bool(res.get("changed")),
                    failed=is_failed,
                    msg=secrets.mask(str(res.get("msg", "") or res.get("stderr", "") or "")),
                    raw=secrets.mask_data(res),
                )
                if task.changed:
                    changed.append(task)
                if is_failed:
                    failed.append(task)
            stdout = secrets.mask(runner.stdout.read() if runner.stdout else "")
            stats = _stats(runner.stats or {})
            rc = int(runner.rc if runner.rc is not None else 1)
        finally:
            shutil.rmtree(private, ignore_errors=True)
        for line in stdout.splitlines():
            if line.strip():
                log.debug("%s", line)
        return PlaybookResult(str(playbook), rc, stats, tuple(changed), tuple(failed), stdout)


def failure_message(result: PlaybookResult) -> str:
    """What went wrong in words: each failed task (host, task, Ansible's message), else Ansible's own error."""
    if result.failed_tasks:
        return "; ".join(
            f"{task.host}: task {task.task!r} ({task.action}): {task.msg or 'failed'}" for task in result.failed_tasks
        )
    dark = [host for host, stats in result.stats.items() if stats.unreachable]
    if dark:
        return f"unreachable: {', '.join(dark)}"
    lines = [line.rstrip() for line in result.stdout.splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith(("ERROR!", "[ERROR]"))), None)
    shown = lines[start : start + 12] if start is not None else lines[-12:]
    return "\n".join(shown) or "ansible-playbook gave no output"


def _stats(raw: Mapping[str, Mapping[str, int]]) -> dict[str, PlaybookHostStats]:
    hosts: set[str] = set()
    for per_host in raw.values():
        hosts.update(per_host)
    return {
        host: PlaybookHostStats(
            ok=raw.get("ok", {}).get(host, 0),
            changed=raw.get("changed", {}).get(host, 0),
            failed=raw.get("failures", {}).get(host, 0),
            unreachable=raw.get("dark", {}).get(host, 0),
            skipped=raw.get("skipped", {}).get(host, 0),
        )
        for host in sorted(hosts)
    }


def _collections_paths() -> list[str]:
    """The shipped collection first, then the paths Ansible is configured with (ansible.cfg, environment)."""
    from ansible import constants as C

    configured = [os.path.expanduser(str(p)) for p in (C.COLLECTIONS_PATHS or [])]
    return list(dict.fromkeys([str(collections_dir()), *configured]))
