"""Results of playbooks run from roles: per-host stats and the tasks that changed or failed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, final

__all__ = ["PlaybookHostStats", "PlaybookResult", "TaskResult"]


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
