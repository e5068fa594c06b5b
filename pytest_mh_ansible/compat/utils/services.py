"""``pytest_mh.utils.services``: ``SystemdServices``, pytest-mh's ``systemctl`` commands with their state put back."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self

from ... import Services
from ..conn import HostConnection, HostProcess, ProcessLogLevel, ProcessResult, compat_conn
from ..utility import MultihostReentrantUtility

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["SystemdServices"]

_QUIET = ProcessLogLevel.Error
_SYSTEMD = "[ -d /run/systemd/system ]"
"""True on a host that systemd runs; elsewhere (sysv init) the commands fall back to ``service NAME ACTION``."""


def _systemctl(action: str, service: str) -> str:
    """``systemctl ACTION SERVICE``, or the ``service`` command on a host without systemd."""
    q = shlex.quote(service)
    sysv = {"start": "start", "stop": "stop", "restart": "restart", "reload": "reload", "status": "status"}
    fallback = f"service {q} {sysv[action]}" if action in sysv else f"echo 'systemctl {action}: no systemd' >&2; false"
    return f"if {_SYSTEMD}; then systemctl {action} {q}; else {fallback}; fi"


def _show_logs(service: str) -> str:
    """Print the unit's status and journal (for the log of a failed command); nothing without systemd."""
    q = shlex.quote(service)
    return (
        f"if {_SYSTEMD}; then echo '+ systemctl status {service}'; systemctl status {q}; echo; "
        f"echo '+ journalctl --no-pager -xeu {service}'; journalctl --no-pager -xeu {q}; fi"
    )


def _logged(service: str, command: str) -> str:
    """``command``; when it fails, the unit's status and journal are printed (for the log), and its code kept."""
    return f"{command} || {{ rc=$?; {_show_logs(service)}; exit $rc; }}"


def _fresh(action: str, service: str) -> str:
    """``ACTION`` after ``systemctl reset-failed``: a unit stopped and started often never hits the start rate limit."""
    reset = f"if {_SYSTEMD}; then systemctl reset-failed {shlex.quote(service)} 2>/dev/null; fi; "
    return _logged(service, reset + _systemctl(action, service))


def _restore_script(states: dict[str, bool]) -> str:
    """pytest-mh's way back: reload the units, then stop each touched service and start those that were running."""
    lines = [f"if {_SYSTEMD}; then systemctl daemon-reload; fi", "rc=0"]
    for service, running in states.items():
        lines.append(f"{{ {_systemctl('stop', service)}; }} >/dev/null 2>&1")
        if running:
            lines.append(f"{{ {_fresh('start', service)}; }} || rc=1")
    return "\n".join([*lines, "exit $rc"])


@dataclass(eq=False)
class _Undo:
    """Puts the services touched in one state back; runs once, by that state's exit or by the journal."""

    conn: HostConnection
    states: dict[str, bool] = field(default_factory=dict)
    done: bool = False

    def __call__(self) -> None:
        if not self.done and self.states:
            self.done = True
            self.conn.run(_restore_script(self.states), log_level=_QUIET, raise_on_error=False)


class SystemdServices(MultihostReentrantUtility[Any], Services):
    """pytest-mh's service utility: ``systemctl`` start, stop, restart, reload...; touched services are put back.

    As in pytest-mh, each command is one ``systemctl`` call returning its ``ProcessResult`` (or,
    for ``async_*``, the running ``Process``); ``start`` and ``restart`` run ``systemctl
    reset-failed`` first, so a test that starts a unit many times never meets systemd's start rate
    limit; a failing command prints the unit's status and journal into the log. Before its first
    change in a state, whether a service runs is noted (:attr:`initial_states`); when the state
    ends (the end of the test for a role's utility, the end of a ``with svc:`` block, else the end
    of the scope through the rollback journal, which is also the backstop), units are reloaded
    (``daemon-reload``) and each touched service is stopped, then started again if it was running,
    as pytest-mh does. On a host without systemd (sysv init), ``service NAME ACTION`` is run
    instead; ``get_property`` and ``reload_daemon`` need systemd. This project's ``enable`` and
    ``disable`` (through Ansible, enabled state restored) stay available.

    Example::

        client.svc.restart("sssd")
        assert client.svc.is_active("sssd")
        proc = client.svc.async_stop("sssd")   # returns at once
        proc.wait()
    """

    def __init__(self, host: Any) -> None:
        super().__init__(host)
        self.initial_states: dict[str, bool] = {}
        """Whether each service touched in the current state was running before its first change."""
        self._undos: list[_Undo] = []  # one per open state (``__enter__``); empty: the journal's scope

    @property
    def _conn(self) -> HostConnection:
        return compat_conn(self.host)

    # -- states ---------------------------------------------------------------------------------------
    def __enter__(self) -> Self:
        """Start a new state: services touched from now on are put back by :meth:`__exit__`."""
        undo = _Undo(self._conn)
        self._undos.append(undo)
        self.initial_states = undo.states
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        """Reload the units, stop each service touched since the matching :meth:`__enter__`, start those that ran."""
        if not self._undos:
            return
        undo = self._undos.pop()
        for service, running in undo.states.items():
            self.logger.info(f'systemd: restoring "{service}" to {"started" if running else "stopped"}')
        undo()
        outer = self._undos[-1] if self._undos else self.host.journal.recall(self._key)
        self.initial_states = outer.states if isinstance(outer, _Undo) and not outer.done else {}

    @property
    def _key(self) -> str:
        return f"compat.svc:{self.host.name}"

    def _scope_undo(self) -> _Undo:
        """The undo of the journal's current scope (used outside any ``with`` block), made on first need."""
        undo = self.host.journal.recall(self._key)
        if not isinstance(undo, _Undo) or undo.done:
            undo = _Undo(self._conn)
            self.host.journal.remember(self._key, undo)
        return undo

    def _touch(self, service: str) -> None:
        """Note whether ``service`` runs, before its first change in the current state (one ``systemctl status``).

        When the state's undo has run already (the journal's scope ended inside a longer state),
        the state starts afresh.
        """
        if self._undos and self._undos[-1].done:
            self._undos[-1] = _Undo(self._conn)
        undo = self._undos[-1] if self._undos else self._scope_undo()
        if service in undo.states:
            return
        status = self._conn.run(_systemctl("status", service), log_level=ProcessLogLevel.Silent, raise_on_error=False)
        running = status.rc == 0 or (status.rc == 3 and "Active: activating" in status.stdout)
        if not undo.states:  # the first service of this state: its undo goes to the journal (the backstop)
            self.host.journal.record(self.host, f"services of {type(self).__name__}", undo)
        undo.states[service] = running
        self.initial_states = undo.states

    # -- changes ---------------------------------------------------------------------------------------
    def _change(self, verb: str, action: str, service: str, raise_on_error: bool) -> ProcessResult:
        self._touch(service)
        self.logger.info(f'systemd: {verb} "{service}"')
        script = (
            _fresh(action, service) if action in ("start", "restart") else _logged(service, _systemctl(action, service))
        )
        return self._conn.run(script, raise_on_error=raise_on_error, log_level=_QUIET)

    def start(self, service: str, raise_on_error: bool = True) -> ProcessResult:  # type: ignore[override]
        """``systemctl reset-failed`` and ``start``; stopped again when the state ends if it was not running."""
        return self._change("starting", "start", service, raise_on_error)

    def stop(self, service: str, raise_on_error: bool = True) -> ProcessResult:  # type: ignore[override]
        """``systemctl stop``; started again when the state ends if it was running."""
        return self._change("stopping", "stop", service, raise_on_error)

    def restart(self, service: str, raise_on_error: bool = True) -> ProcessResult:  # type: ignore[override]
        """``systemctl reset-failed`` and ``restart``; stopped again when the state ends if it was not running."""
        return self._change("restarting", "restart", service, raise_on_error)

    def reload(self, service: str, raise_on_error: bool = True) -> ProcessResult:  # type: ignore[override]
        """``systemctl reload`` (the service's own reload; its running state is not recorded, as in pytest-mh)."""
        self.logger.info(f'systemd: reloading "{service}"')
        return self._conn.run(_logged(service, _systemctl("reload", service)), raise_on_error=raise_on_error,
                              log_level=_QUIET)  # fmt: skip

    def _async(self, verb: str, action: str, service: str) -> HostProcess:
        self._touch(service)
        self.logger.info(f'systemd: {verb} "{service}" asynchronously')
        script = (
            _fresh(action, service) if action in ("start", "restart") else _logged(service, _systemctl(action, service))
        )
        return self._conn.async_run(script, log_level=_QUIET)

    def async_start(self, service: str) -> HostProcess:
        """:meth:`start` without waiting: the running ``Process`` (``wait()`` gives its result)."""
        return self._async("starting", "start", service)

    def async_stop(self, service: str) -> HostProcess:
        """:meth:`stop` without waiting: the running ``Process``."""
        return self._async("stopping", "stop", service)

    def async_restart(self, service: str) -> HostProcess:
        """:meth:`restart` without waiting: the running ``Process``."""
        return self._async("restarting", "restart", service)

    def async_reload(self, service: str) -> HostProcess:
        """:meth:`reload` without waiting: the running ``Process``."""
        self.logger.info(f'systemd: reloading "{service}" asynchronously')
        return self._conn.async_run(_logged(service, _systemctl("reload", service)), log_level=_QUIET)

    # pytest-mh's helpers, which subclasses of its SystemdServices call
    def _debug_failure(self, service: str, command: str) -> str:
        """``command`` that, when it fails, prints the unit's status and journal and keeps its exit code."""
        return _logged(service, command)

    def _query_logs_command(self, service: str) -> str:
        """The commands that print the unit's status and journal after a failed command (its ``$?`` kept)."""
        return f"rc=$?; {_show_logs(service)}; exit $rc"

    # -- reading ----------------------------------------------------------------------------------------
    def status(self, service: str, raise_on_error: bool = True) -> ProcessResult:  # type: ignore[override]
        """``systemctl status`` (``service NAME status`` without systemd): rc 0 running, 3 stopped, 4 no such unit."""
        return self._conn.run(_systemctl("status", service), raise_on_error=raise_on_error)

    def async_status(self, service: str) -> HostProcess:
        """:meth:`status` without waiting: the running ``Process``."""
        return self._conn.async_run(_systemctl("status", service))

    def get_property(self, service: str, prop: str, raise_on_error: bool = True) -> str:
        """A unit property's value (``systemctl show SERVICE --value --property PROP``), e.g. ``MainPID``."""
        return self._conn.run(self._show(service, prop), raise_on_error=raise_on_error).stdout.strip()

    def async_get_property(self, service: str, prop: str) -> HostProcess:
        """:meth:`get_property` without waiting: the running ``Process`` (the value is its ``stdout``)."""
        return self._conn.async_run(self._show(service, prop))

    @staticmethod
    def _show(service: str, prop: str) -> str:
        return f"systemctl show {shlex.quote(service)} --value --property {shlex.quote(prop)}"

    def reload_daemon(self, raise_on_error: bool = True) -> ProcessResult:
        """``systemctl daemon-reload``: read changed unit files."""
        return self._conn.run("systemctl daemon-reload", raise_on_error=raise_on_error)

    def async_reload_daemon(self) -> HostProcess:
        """:meth:`reload_daemon` without waiting: the running ``Process``."""
        self.logger.info("systemd: reloading systemd daemon")
        return self._conn.async_run("systemctl daemon-reload", log_level=_QUIET)

    def is_active(self, service: str) -> bool:
        """Whether ``service`` runs (``systemctl is-active``; ``service NAME status`` without systemd)."""
        check = (
            f"if {_SYSTEMD}; then systemctl is-active {shlex.quote(service)}; else {_systemctl('status', service)}; fi"
        )
        return self._conn.run(check, raise_on_error=False, log_level=ProcessLogLevel.Silent).rc == 0
