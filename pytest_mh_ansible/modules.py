"""Ansible modules on a host (``host.ansible``): results, change recording and the per-host entry point."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, final

from ._private.secrets import mask_args, secrets
from .errors import HostUnreachableError, ModuleError

if TYPE_CHECKING:
    from ._private.ansible.executor import BeforeCommand, ModuleCallOptions, ModuleExecutor
    from .host import MultihostHost

__all__ = ["ChangeRecorder", "HostModules", "ModuleResult"]

_INTERRUPTED: Mapping[str, Any] = MappingProxyType(
    {"changed": True, "mh_interrupted": True, "msg": "interrupted while in flight; it may have changed the host"}
)
_FAILED: Mapping[str, Any] = MappingProxyType(
    {"changed": True, "mh_failed": True, "msg": "failed; it may have changed the host before it did"}
)
_INTERNAL = "mh_ansible.rollback."  # the journal's own modules, never called by the user directly
# Action plugins that choose their module from a fact (service_mgr, pkg_mgr) and, without the host's
# facts, run the setup module first at every call (ansible-core calls it a "very expensive step").
_FACT_MODULES = frozenset(
    {
        *("service", "ansible.builtin.service", "ansible.legacy.service"),
        *("package", "ansible.builtin.package", "ansible.legacy.package"),
    }
)


@final
@dataclass(frozen=True)
class ModuleResult:
    """What one Ansible module call on one host gave back.

    Example::

        result = server.ansible.run("ansible.builtin.copy", dest="/etc/app.conf", content="debug = 1\\n")
        assert result.changed
        result.diff[0]["after"]  # 'debug = 1\\n'
        result.raw["checksum"]  # the module's own return values

    :ivar host: The inventory hostname.
    :ivar module: The module as called (``ansible.builtin.copy``).
    :ivar changed: The module changed the host (or, in check mode, would have).
    :ivar failed: The module failed (only seen on results that were not raised).
    :ivar skipped: Ansible skipped the call (e.g. a module without check-mode support in check mode).
    :ivar msg: The module's message, secrets masked.
    :ivar rc: The exit code, for modules that report one (``command``, ``shell``), else None.
    :ivar diff: The module's diffs, always a list of Ansible diff dicts (``before``/``after``...).
    :ivar raw: The whole result, secrets masked, read-only.
    """

    host: str
    module: str
    changed: bool
    failed: bool
    skipped: bool
    msg: str
    rc: int | None
    diff: list[dict[str, Any]] = field(repr=False)
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_raw(cls, host: str, module: str, raw: Mapping[str, Any]) -> ModuleResult:
        """Normalise an Ansible task result: flags as bools, ``diff`` as a list, secrets masked."""
        masked = secrets.mask_data(dict(raw))
        rc = masked.get("rc")
        try:
            rc = None if rc is None or isinstance(rc, bool) else int(rc)
        except (TypeError, ValueError):
            rc = None
        diff = masked.get("diff")
        if isinstance(diff, Mapping):
            diffs = [dict(diff)] if diff else []
        elif isinstance(diff, list | tuple):
            diffs = [dict(item) for item in diff if isinstance(item, Mapping) and item]
        else:
            diffs = []
        return cls(
            host=host,
            module=module,
            changed=bool(masked.get("changed", False)),
            failed=bool(masked.get("failed", False)),
            skipped=bool(masked.get("skipped", False)),
            msg=str(masked.get("msg") or ""),
            rc=rc,
            diff=diffs,
            raw=MappingProxyType(masked),
        )


class ChangeRecorder(Protocol):
    """Told about every module call that may change a host, so that it can be undone later.

    The rollback journal implements it. :meth:`prepare` runs before the call (it may save
    the state to restore), :meth:`arguments` may add arguments to the call (a module of
    ``mh_ansible.rollback`` that snapshots in the same call), then exactly one of :meth:`commit`
    (the call ran) or :meth:`abort` (the host could not be reached). Check-mode calls are never recorded.

    A call that *failed* may have changed the host before it did (``user`` creates the account, then
    refuses an ssh key type): it is committed with a result whose ``changed`` is True and whose
    ``raw["mh_failed"]`` is True, so that its inverse is recorded as for a change.

    A call *interrupted* while in flight (Ctrl-C, SIGTERM, SIGHUP, a test timeout) may or may not
    have changed the host: it is committed with a result whose ``changed`` is True and whose
    ``raw["mh_interrupted"]`` is True, so that its inverse is recorded and the rollback runs it.
    """

    def prepare(
        self, host: MultihostHost, module: str, args: Mapping[str, Any], *, revert_paths: Sequence[str] | None
    ) -> object:
        """Called before the module runs; returns a token handed to commit/abort."""
        ...

    def prepare_deferred(
        self, host: MultihostHost, module: str, args: Mapping[str, Any], *, revert_paths: Sequence[str] | None
    ) -> tuple[object, BeforeCommand | None]:
        """:meth:`prepare`, with a command that must run on the host right before the module left to the caller.

        The caller hands it to the executor (``before``), which carries it with the module call where
        it can (the warm agent runs it right before the module: no round trip of its own) and runs it
        apart first otherwise. Optional: a recorder without this method runs such commands in :meth:`prepare`.
        """
        ...

    def arguments(self, token: object) -> Mapping[str, Any]:
        """Arguments to add to the module call (e.g. the name of a snapshot the module takes itself).

        Optional: a recorder without this method adds none.
        """
        ...

    def commit(self, token: object, result: ModuleResult) -> None:
        """The module call succeeded with ``result``."""
        ...

    def abort(self, token: object) -> None:
        """The module call failed or could not be made."""
        ...

    def called(
        self, host: MultihostHost, module: str, args: Mapping[str, Any], *, become: bool | None, become_user: str | None
    ) -> None:
        """A module call succeeded (undo steps' calls included): its record, for a playbook export.

        Optional: a recorder without this method is not told.
        """
        ...


class HostModules:
    """Ansible modules on one host, run in the pytest process: what tests get as ``host.ansible``.

    Arguments are data: Jinja in them is left alone unless ``template=True``. A failed
    module raises :class:`~pytest_mh_ansible.errors.ModuleError`. Every call that may change
    the host is reported to the recorder (the rollback journal), if there is one.

    Example::

        server.ansible.run("ansible.builtin.lineinfile", path="/etc/app.conf", line="debug = 1")
        server.ansible.run("ansible.builtin.service", name="app", state="restarted", become=True)
        server.ansible.run("ansible.builtin.user", name="alice", state="present", check=True).changed
        server.ansible.facts()["ansible_service_mgr"]  # 'sysvinit'

    :param host: The host the modules run on.
    :param executor: What runs them (the session's executor).
    :param recorder: Told about each non-check call (the rollback journal), or None.
    """

    def __init__(
        self, host: MultihostHost, executor: ModuleExecutor, *, recorder: ChangeRecorder | None = None
    ) -> None:
        self._host = host
        self._executor = executor
        self._recorder = recorder
        self._facts: dict[str, Any] | None = None

    def __mh_describe__(self) -> str:
        return f"ansible modules of host {self._host.name!r}"

    def run(
        self,
        module: str,
        /,
        args: Mapping[str, Any] | None = None,
        *,
        check: bool = False,
        diff: bool = True,
        become: bool | None = None,
        become_user: str | None = None,
        no_log: bool = False,
        template: bool = False,
        revert_paths: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> ModuleResult:
        """Run ``module`` on the host, as a one-task play would.

        :param module: The module (FQCN: ``ansible.builtin.copy``, ``mh_ansible.rollback.…``).
        :param args: Module arguments whose names clash with this method's keywords (``check``...).
        :param check: Check mode: predict the change, make none (and record nothing).
        :param diff: Ask the module for a diff (``result.diff``).
        :param become: Privilege escalation; None follows the host's ``ansible_become``.
        :param become_user: Become this user (implies become unless ``become=False``).
        :param no_log: Hide the arguments and the result, as Ansible's ``no_log: true``.
        :param template: Render Jinja in the arguments with the host's variables (vault included).
        :param revert_paths: Files the call changes, for the recorder to save first.
        :param kwargs: Module arguments.
        :returns: The result of a successful (or skipped) call.
        :raises ModuleError: The module failed or is unknown (host, module and message named, secrets masked).
        :raises HostUnreachableError: The host cannot be reached.
        :raises TypeError: An argument is given both in ``args`` and as a keyword.
        """
        __tracebackhide__ = True
        both = set(args or {}) & set(kwargs)
        if both:
            raise TypeError(f"{module}: argument(s) {', '.join(sorted(both))} given both in args and as keywords")
        merged: dict[str, Any] = {**(args or {}), **kwargs}
        if module in _FACT_MODULES and self._facts is None:
            self.facts()  # the service and package actions would otherwise run setup on every call
        options: ModuleCallOptions = {
            "check": check,
            "diff": diff,
            "become": become,
            "become_user": become_user,
            "no_log": no_log,
            "template": template,
            "task_vars": None if self._facts is None else {"ansible_facts": self._facts},
        }
        recording = self._recorder is not None and not check
        token: object = None
        before: BeforeCommand | None = None
        if recording:
            assert self._recorder is not None
            deferred = getattr(self._recorder, "prepare_deferred", None)  # optional in the protocol
            try:
                if deferred is not None:
                    token, before = deferred(self._host, module, merged, revert_paths=revert_paths)
                else:
                    token = self._recorder.prepare(self._host, module, merged, revert_paths=revert_paths)
            except ModuleError as err:
                if err.module == module or not err.module.startswith(_INTERNAL):
                    raise
                # The journal's own preparation (a snapshot of the paths) failed: report it as the
                # user's call, with the module's own opinion of its arguments when it has one.
                self._raise_unprepared(module, merged, err, options)
            extra = getattr(self._recorder, "arguments", None)  # optional in the protocol
            if extra is not None:
                merged = {**merged, **extra(token)}
            if before is not None:
                options["before"] = before
        try:
            raw = self._executor.run(self._host.name, module, merged, **options)
            if before is not None:
                _settle(before)
            result = ModuleResult.from_raw(self._host.name, module, raw)
            if result.failed:
                raise ModuleError(self._host.name, module, _describe_failure(result, merged, no_log), dict(result.raw))
        except ModuleError:
            # A module may fail half-way (a user created, then its key type refused): its inverse is
            # recorded as for a change; one that changed nothing finds nothing to undo.
            if recording:
                assert self._recorder is not None
                if _never_ran(before):
                    self._recorder.abort(token)
                else:
                    self._recorder.commit(token, ModuleResult.from_raw(self._host.name, module, _FAILED))
            raise
        except HostUnreachableError:
            if recording:
                assert self._recorder is not None
                self._recorder.abort(token)
            raise
        except BaseException:
            # Interrupted in flight: the module may have run (its process is killed with the channel),
            # so its inverse is recorded as for a change; undoing what did not happen is harmless.
            if recording:
                assert self._recorder is not None
                if _never_ran(before):
                    self._recorder.abort(token)
                else:
                    self._recorder.commit(token, ModuleResult.from_raw(self._host.name, module, _INTERRUPTED))
            raise
        if recording:
            assert self._recorder is not None
            self._recorder.commit(token, result)
            called = getattr(self._recorder, "called", None)  # optional in the protocol
            if called is not None:
                called(self._host, module, merged, become=become, become_user=become_user)
        return result

    def packages_changed(self) -> None:
        """Say that the host's packages changed outside a module call (``apt-get`` run as a command).

        The warm executor keeps Python interpreters on the host: it checks whether a file they
        loaded changed, and replaces those (a package module's change does this by itself). The
        rollback journal calls it after purging a test's packages with ``apt-get``; a test or a
        utility that installs or removes packages with commands should call it too::

            server.host.conn.run("apt-get install -y python3-ldap")
            server.host.ansible.packages_changed()
        """
        self._executor.packages_changed(self._host.name)

    def _raise_unprepared(
        self, module: str, args: Mapping[str, Any], err: ModuleError, options: ModuleCallOptions
    ) -> NoReturn:
        """Raise the error of ``module`` itself (checked, nothing changed), else say why it cannot be rolled back."""
        __tracebackhide__ = True
        no_log = options["no_log"]
        raw = self._executor.run(
            self._host.name,
            module,
            args,
            **_plain_call(check=True, become=options["become"], become_user=options["become_user"], no_log=no_log),
        )
        checked = ModuleResult.from_raw(self._host.name, module, raw)
        if checked.failed:
            raise ModuleError(
                self._host.name, module, _describe_failure(checked, args, no_log), dict(checked.raw)
            ) from None
        why = str(err.result.get("msg") or err.message)
        message = (
            f"not run: its change could not be saved for rollback first ({why}); "
            "give absolute paths, or name what it changes with revert_paths=[...]"
        )
        shown = secrets.mask(repr(mask_args(args, no_log=no_log)))
        raise ModuleError(self._host.name, module, f"{message}; args: {shown}") from None

    def facts(self, refresh: bool = False) -> Mapping[str, Any]:
        """The host's Ansible facts (``ansible_service_mgr``, ``ansible_distribution``...), gathered once.

        :param refresh: Gather them again (after a change that facts reflect).
        """
        if self._facts is None or refresh:
            raw = self._executor.run(self._host.name, "ansible.builtin.setup", {}, **_plain_call())
            result = ModuleResult.from_raw(self._host.name, "ansible.builtin.setup", raw)
            if result.failed:
                raise ModuleError(self._host.name, "ansible.builtin.setup", result.msg or "failed", dict(result.raw))
            facts = raw.get("ansible_facts")
            self._facts = dict(facts) if isinstance(facts, Mapping) else {}
        return MappingProxyType(self._facts)


def _settle(before: BeforeCommand) -> None:
    """After the executor: the error that stopped the command before the module (the module did not run),
    or the command itself if no module got that far (an action that failed first): then it runs apart now."""
    __tracebackhide__ = True
    if before.error is not None:
        raise before.error
    if not before.done:
        before.run_apart()


def _never_ran(before: BeforeCommand | None) -> bool:
    """Whether the module cannot have run: the command before it failed, or never went to the host."""
    return before is not None and (before.error is not None or not before.done)


def _plain_call(
    *, check: bool = False, become: bool | None = None, become_user: str | None = None, no_log: bool = False
) -> ModuleCallOptions:
    """The options of a call the journal or the facts cache makes itself: no diff, no templating."""
    return {
        "check": check,
        "diff": False,
        "become": become,
        "become_user": become_user,
        "no_log": no_log,
        "template": False,
    }


def _describe_failure(result: ModuleResult, args: Mapping[str, Any], no_log: bool) -> str:
    """Ansible's message, with what explains it (rc, stderr) and the arguments, secrets masked."""
    parts = [result.msg or "failed"]
    if result.rc is not None:
        parts.append(f"rc={result.rc}")
    stderr = str(result.raw.get("stderr") or "").strip()
    if stderr and not no_log:
        parts.append(f"stderr: {stderr[-2000:]}")
    parts.append(f"args: {secrets.mask(repr(mask_args(args, no_log=no_log)))}")
    return "; ".join(parts)
