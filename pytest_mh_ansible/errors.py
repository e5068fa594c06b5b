"""The exception tree of pytest-mh-ansible: one base class, data carried as attributes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .playbook import PlaybookResult, TaskResult

__all__ = [
    "HostLeaseError",
    "HostUnreachableError",
    "InventoryError",
    "LabError",
    "ModuleError",
    "MultihostError",
    "PlaybookError",
    "ProcessError",
    "ProcessTimeoutError",
    "RollbackError",
    "TeardownExceptionGroup",
    "TopologyMarkError",
    "UnsafePathError",
]


class MultihostError(Exception):
    """Base class of every error raised by pytest-mh-ansible."""


class _WhereError(MultihostError):
    """An error found in one named place (a file, a test): ``where: message``, as compilers and pytest print them.

    :param where: The place, as the user would look for it.
    :param message: What is wrong there, already naming the value.
    """

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.message = message


class InventoryError(_WhereError):
    """An Ansible inventory (or its vault) could not be read.

    :param source: The inventory source (path, host list, ...) at fault.
    :param message: What is wrong, already naming the value.
    """

    def __init__(self, source: str, message: str) -> None:
        super().__init__(source, message)
        self.source = source


class TopologyMarkError(_WhereError):
    """A ``@pytest.mark.topology`` marker has arguments that cannot be understood.

    :param nodeid: The test (or collector) whose marker is wrong.
    :param message: What is wrong with it.
    """

    def __init__(self, nodeid: str, message: str) -> None:
        super().__init__(nodeid, message)
        self.nodeid = nodeid


class HostUnreachableError(MultihostError):
    """A host of the inventory cannot be reached through its Ansible connection.

    :param host: The inventory hostname.
    :param reason: Why (Ansible's message, secrets masked).
    """

    def __init__(self, host: str, reason: str) -> None:
        super().__init__(f"host {host!r} is unreachable: {reason}")
        self.host = host
        self.reason = reason


class HostLeaseError(MultihostError):
    """A host stayed leased by another pytest session (maybe on another controller) for too long.

    :param host: The inventory hostname.
    :param holder: Who holds the lease (``controller/pid/run``), as the lease on the host says.
    :param expires: When the holder's lease runs out unless renewed (host clock, seconds since the epoch).
    :param waited: How long this session waited (``--mh-lease-timeout``).
    """

    def __init__(self, host: str, holder: str, expires: float | None, waited: float) -> None:
        import time

        until = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expires)) if expires else "unknown"
        super().__init__(
            f"host {host!r} is leased by {holder!r} (lease renewed until {until}); gave up after "
            f"{waited:.0f} s (--mh-lease-timeout)"
        )
        self.host = host
        self.holder = holder
        self.expires = expires
        self.waited = waited


class ProcessError(MultihostError):
    """A command run on a host exited with a non-zero code.

    The message names the host, the command, the exit code and the output, with
    secrets masked.
    """

    def __init__(
        self,
        host: str,
        command: str,
        rc: int,
        stdout: str,
        stderr: str,
        *,
        message: str | None = None,
    ) -> None:
        self.host = host
        self.command = command
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        if message is None:
            message = f"{host}: command {command!r} exited with code {rc}"
        details = [message]
        if stdout.strip():
            details.append(f"stdout:\n{_tail(stdout)}")
        if stderr.strip():
            details.append(f"stderr:\n{_tail(stderr)}")
        super().__init__("\n".join(details))


class ProcessTimeoutError(ProcessError):
    """A command did not finish within its timeout; it was killed on the host too."""

    def __init__(self, host: str, command: str, timeout: float, stdout: str = "", stderr: str = "") -> None:
        self.timeout = timeout
        super().__init__(
            host,
            command,
            124,
            stdout,
            stderr,
            message=f"{host}: command {command!r} timed out after {timeout:g} s and was killed",
        )


class ModuleError(MultihostError):
    """An Ansible module failed on a host.

    :param host: The inventory hostname.
    :param module: The module's name as called (FQCN).
    :param message: Ansible's message (secrets already masked).
    :param result: The module's whole result (secrets masked).
    """

    def __init__(self, host: str, module: str, message: str, result: dict[str, Any] | None = None) -> None:
        super().__init__(f"{host}: module {module} failed: {message}")
        self.host = host
        self.module = module
        self.message = message
        self.result = result or {}


class PlaybookError(MultihostError):
    """A playbook failed (a task failed, a host was unreachable) or could not be run at all (a parse error).

    Raised by ``role.playbook()``, ``host.playbook()`` and ``mh.playbook()`` unless ``check=True``
    or ``raise_on_error=False``. What the playbook changed before it failed is still rolled back.

    Example::

        with pytest.raises(PlaybookError) as info:
            server.playbook("playbooks/broken.yml")
        info.value.failed_tasks[0].task   # 'Install the app'

    :param playbook: The playbook's path.
    :param hosts: The hosts it was limited to.
    :param message: What failed: each failed task with its host and Ansible's message, or Ansible's error.
    :param result: The whole result.
    """

    def __init__(self, playbook: str, hosts: Sequence[str], message: str, result: PlaybookResult) -> None:
        super().__init__(f"playbook {playbook} on {', '.join(hosts)} failed (rc {result.rc}): {message}")
        self.playbook = playbook
        self.hosts = tuple(hosts)
        self.message = message
        self.result = result

    @property
    def failed_tasks(self) -> tuple[TaskResult, ...]:
        """The tasks that failed, with host, task name, action and message (empty for a parse error)."""
        return self.result.failed_tasks


class RollbackError(MultihostError):
    """One undo step of the rollback journal failed; several are gathered in a TeardownExceptionGroup.

    :param host: The inventory hostname.
    :param operation: What was being undone (``"ansible.builtin.copy dest=/etc/app.conf"``).
    :param cause: Why it failed.
    """

    def __init__(self, host: str, operation: str, cause: str) -> None:
        super().__init__(f"{host}: could not revert {operation}: {cause}")
        self.host = host
        self.operation = operation
        self.cause = cause


class LabError(MultihostError):
    """The local lab could not be brought up, inspected or torn down."""


class UnsafePathError(MultihostError):
    """A local directory or file that others could change (a lock or lab directory), refused.

    :param path: The path at fault.
    :param reason: Why it is refused (its owner, its mode, a symbolic link).
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class TeardownExceptionGroup(ExceptionGroup[Exception]):
    """Every failure of one teardown, gathered: each one names the object that failed.

    Teardown never stops at the first failure; it runs every step and raises this group.
    """

    def __new__(cls, message: str, exceptions: Sequence[Exception]) -> TeardownExceptionGroup:
        return super().__new__(cls, message, exceptions)

    def derive(self, excs: Sequence[Exception]) -> TeardownExceptionGroup:  # type: ignore[override]
        return TeardownExceptionGroup(self.message, excs)


def _tail(text: str, limit: int = 4000) -> str:
    if len(text) <= limit:
        return text.rstrip()
    return "... " + text[-limit:].rstrip()


def describe(obj: Any) -> str:
    """A short human name of an object in error messages (``host 'client1'``, ``utility 'fs' of ...``)."""
    describe_fn = getattr(obj, "__mh_describe__", None)
    if callable(describe_fn):
        return str(describe_fn())
    return repr(obj)
