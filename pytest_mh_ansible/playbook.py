"""Results of playbooks run from roles: per-host stats and the tasks that changed or failed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, final

__all__ = ["PlaybookHostStats", "PlaybookOptions", "PlaybookResult", "TaskResult"]


class PlaybookOptions(TypedDict, total=False):
    """The keywords of every ``playbook()``: a host's, a role's and the ``mh`` fixture's.

    A key left out takes its default (None, or False for ``check``). Type checkers check the
    keywords of ``mh.playbook(path, roles, **options)`` against this class; at run time an unknown
    keyword raises ``TypeError``.

    Example::

        mh.playbook("playbooks/cluster.yml", [server, replica], extra_vars={"size": 2}, check=True)

    :ivar extra_vars: Variables given to the play, above the inventory's (secret-named ones are masked).
    :ivar tags: Run only the tasks with these tags.
    :ivar skip_tags: Skip the tasks with these tags.
    :ivar check: Run in check mode (predict changes, make none).
    :ivar become: Force privilege escalation on (True) for the whole play.
    :ivar revert_paths: Paths the playbook changes: snapshotted before, restored at the end of the scope.
    :ivar teardown: A playbook that undoes this one, run at the end of the scope if anything changed.
    :ivar raise_on_error: Raise when the playbook fails; None means yes, except with ``check=True``.
    """

    extra_vars: Mapping[str, Any] | None
    tags: Sequence[str] | None
    skip_tags: Sequence[str] | None
    check: bool
    become: bool | None
    revert_paths: Sequence[str] | None
    teardown: str | None
    raise_on_error: bool | None


@final
@dataclass(frozen=True)
class PlaybookHostStats:
    """What ``ansible-playbook``'s recap says of one host."""

    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0


@final
@dataclass(frozen=True)
class TaskResult:
    """One task result of a playbook run (only changed and failed ones are kept)."""

    host: str
    task: str
    action: str
    changed: bool
    failed: bool
    msg: str
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)


@final
@dataclass(frozen=True)
class PlaybookResult:
    """The outcome of ``role.playbook(...)``.

    Example::

        result = server.playbook("playbooks/app_setup.yml", extra_vars={"app_port": 8080})
        assert result.ok
        assert result.stats["server1"].changed >= 1
        print([t.task for t in result.changed_tasks])

    :ivar ok: True when no host failed and none was unreachable.
    :ivar rc: The exit code of ``ansible-playbook``.
    :ivar stats: The recap per host.
    :ivar changed_tasks: Tasks that reported a change, in run order.
    :ivar failed_tasks: Tasks that failed (not ignored), in run order.
    :ivar stdout: The playbook's output (secrets masked).
    """

    playbook: str
    rc: int
    stats: Mapping[str, PlaybookHostStats]
    changed_tasks: tuple[TaskResult, ...]
    failed_tasks: tuple[TaskResult, ...]
    stdout: str = field(repr=False, default="")

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not any(s.failed or s.unreachable for s in self.stats.values())
