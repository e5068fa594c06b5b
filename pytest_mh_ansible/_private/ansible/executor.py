"""Running one Ansible module on one host, in the pytest process, for the whole session."""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NotRequired, Protocol, TypedDict, Unpack

from ...errors import HostUnreachableError
from ..secrets import logged_args, mask_args, secrets
from . import compat, control_dirs
from .collection import collections_dir
from .inventory import Inventory, _plain
from .runtime import ansible_output_logged, init_ansible
from .vault import vault_context

__all__ = ["BeforeCommand", "ModuleCallOptions", "ModuleExecutor", "StandardExecutor"]

logger = logging.getLogger("pytest_mh_ansible.modules")
ansible_logger = logging.getLogger("pytest_mh_ansible.ansible")

# Ansible's own global state (Display, CLIARGS, the plugin loaders, the vault context) is
# process-wide: one module call at a time in this process.
_lock = threading.RLock()

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)

# What ansible-playbook keeps of a no_log result (TaskResult's censoring), plus our flags.
_NO_LOG_KEPT = ("attempts", "changed", "failed", "skipped", "unreachable", "rc")
_CENSORED = "the output has been hidden due to the fact that 'no_log: true' was specified for this result"


class BeforeCommand(Protocol):
    """A shell command that the caller of a module call needs run on the host right before the module.

    The rollback journal reads an account and writes the journal's entry in one command before a
    ``user`` or ``group`` change (the ``JournalRecorder`` of the rollback). An executor that
    sends the module's payload over a channel of its own may carry the command in the same
    request (the warm agent runs it right before it forks the module): then it calls
    :meth:`carried` with what the command printed, or :meth:`lost` when the answer never came.
    Otherwise it calls :meth:`run_apart` before the module runs, which runs the command as
    ``host.conn.run(command)`` would, on its own. Only one of the three is called, once.

    The command runs as the host's default user (``ansible_become``), so only a call that keeps the
    host's become settings can carry it. A carried command that exits non-zero holds the module
    back: the executor calls :meth:`carried`, then sends the module again, on its own. When one of
    the methods raises, the module is not run: the error is kept in :attr:`error` for the caller.
    """

    command: str
    """The command, for the host's shell (``/bin/sh`` syntax)."""
    done: bool
    """It was run apart or handed to a carrier (from then on it may have run)."""
    error: BaseException | None
    """What stopped it (then the module was not run), else None."""

    def run_apart(self) -> None:
        """Run the command on its own, over the host's connection."""
        ...

    def carried(self, rc: int, stdout: str) -> None:
        """The carrier ran the command right before the module (exit status ``rc``, its ``stdout``)."""
        ...

    def lost(self, why: str) -> None:
        """The command went with the module, and no answer came back: whether it ran is not known."""
        ...


class ModuleCallOptions(TypedDict):
    """How one module call runs: the keywords of :meth:`ModuleExecutor.run`, passed through as one.

    Every executor (standard, warm, the session's lazy one) and ``HostModules`` hand the same
    keywords along; one definition keeps them in step.
    """

    check: bool
    diff: bool
    become: bool | None
    become_user: str | None
    no_log: bool
    template: bool
    task_vars: NotRequired[Mapping[str, Any] | None]
    before: NotRequired[BeforeCommand | None]


class ModuleExecutor(Protocol):
    """What runs modules for :class:`~pytest_mh_ansible.modules.HostModules`.

    An implementation runs one module on one inventory host the way ``ansible-playbook``
    would run a one-task play (action plugins included) and returns the task result. It
    lives for the session; :meth:`close` releases what it holds (connections, temp dirs).
    :class:`StandardExecutor` is the real one; a faster transport (a warm interpreter on the
    target) can replace it without any change to utilities.
    """

    def run(
        self, host: str, module: str, args: Mapping[str, Any], **options: Unpack[ModuleCallOptions]
    ) -> dict[str, Any]:
        """Run ``module`` with ``args`` on ``host``; the keywords are those of :class:`ModuleCallOptions`.

        :param host: The inventory hostname.
        :param module: The module or action name (FQCN preferred).
        :param args: Module arguments, as data: Jinja in them is not rendered unless ``template``.
        :param check: Check mode (predict, change nothing).
        :param diff: Ask the module for a diff.
        :param become: Privilege escalation; None follows the host's ``ansible_become``.
        :param become_user: Become this user (implies become unless ``become`` is False).
        :param no_log: Censor the result as Ansible does for ``no_log: true``.
        :param template: Render Jinja in ``args`` with the host's variables.
        :param task_vars: Extra variables for this call (facts, ...), on top of the host's.
        :param before: A command to run on the host right before the module (see :class:`BeforeCommand`):
            carried with the module where the executor can, else run apart first.
        :returns: The task result as plain Python data; a failed module gives ``failed: True``.
        :raises HostUnreachableError: The host cannot be reached.
        """
        ...

    def packages_changed(self, host: str) -> None:
        """The packages of ``host`` changed outside a module call (an ``apt-get`` command).

        An executor that keeps interpreters on the host checks whether a file they loaded
        changed, as after a package module's change; others have nothing to do.
        """
        ...

    def close(self) -> None:
        """Release connections and temporary files; the executor may be used again afterwards."""
        ...


class _NullQueue:
    """Stands in for the TaskQueueManager's result queue: there is no worker process to talk to."""

    def send_callback(self, method_name: str, *args: Any, **kwargs: Any) -> None:
        ansible_logger.debug("callback %s", method_name)

    def send_display(self, method: str, *args: Any, **kwargs: Any) -> None:  # pragma: no cover - not a worker
        ansible_logger.debug("%s", secrets.mask(" ".join(str(arg) for arg in args)))

    def send_prompt(self, **kwargs: Any) -> None:
        raise RuntimeError("an Ansible module asked for interactive input, which a test run cannot give")

    def send_task_result(self, *args: Any, **kwargs: Any) -> None:  # pragma: no cover - not a worker
        pass


class StandardExecutor:
    """Runs modules with ansible-core's own ``TaskExecutor``, inside the pytest process.

    Each call is a one-task play, executed the way a ``TaskQueueManager`` worker executes
    it (same action plugins, connection plugins, become, check and diff handling), but
    without the worker fork, the result queue and the strategy: those cost ~25 ms per call
    and mark fds 0-2 non-inheritable and install signal handlers in pytest's process. The
    ssh plugin's ControlMaster keeps the connection warm between calls; its sockets live in
    a private directory that :meth:`close` shuts down.

    Example::

        executor = StandardExecutor(inventory)
        result = executor.run("server1", "ansible.builtin.ping", {}, check=False, diff=False,
                              become=None, become_user=None, no_log=False, template=False)
        result["ping"]  # 'pong'
        executor.close()

    :param inventory: The session's inventory (its loader, variables and vault secrets are used).
    """

    def __init__(self, inventory: Inventory) -> None:
        self._inventory = inventory
        self._facts: dict[str, dict[str, Any]] = {}
        self._cp_dir: str | None = None
        self._configured = False

    # --- life cycle ---------------------------------------------------------------------------

    def packages_changed(self, host: str) -> None:
        """Nothing to do: every module call starts a new interpreter on the host."""

    def close(self) -> None:
        """Stop the ssh ControlMasters started for module calls and remove Ansible's temp files."""
        with _lock:
            cp_dir, self._cp_dir = self._cp_dir, None
            if cp_dir is not None:
                for socket_path in glob.glob(os.path.join(cp_dir, "*")):
                    with contextlib.suppress(OSError, subprocess.SubprocessError):
                        subprocess.run(
                            ["ssh", "-o", f"ControlPath={socket_path}", "-O", "exit", "mh-executor"],
                            stdin=subprocess.DEVNULL,
                            capture_output=True,
                            timeout=10,
                            check=False,
                        )
                control_dirs.remove(cp_dir)
            with contextlib.suppress(Exception):
                self._inventory.loader.cleanup_all_tmp_files()

    def _configure(self) -> None:
        """One-time Ansible set-up: plugin loader, the project's collections, CLI defaults."""
        if self._configured:
            return
        from ansible import constants as C
        from ansible import context
        from ansible.module_utils.common.collections import ImmutableDict
        from ansible.utils.collection_loader import AnsibleCollectionConfig

        init_ansible()
        _forget_plain_collection_imports()
        # Ansible's adjacent-collections mechanism: <dir>/collections is searched first.
        wanted = str(collections_dir().parent)
        if wanted not in [str(Path(p).parent) for p in AnsibleCollectionConfig.playbook_paths]:
            AnsibleCollectionConfig.playbook_paths = [wanted]
        if "connection" not in context.CLIARGS:
            # What Play and PlayContext read as the command line's defaults.
            context.CLIARGS = ImmutableDict(
                {
                    **dict(context.CLIARGS),
                    "connection": C.DEFAULT_TRANSPORT,
                    "module_path": None,
                    "forks": 1,
                    "become": False,
                    "become_method": C.DEFAULT_BECOME_METHOD,
                    "become_user": None,
                    "check": False,
                    "diff": False,
                    "verbosity": 0,
                }
            )
        compat.ensure_hostvars(
            self._inventory.variable_manager, self._inventory.inventory_manager, self._inventory.loader
        )
        self._configured = True

    # --- module calls -------------------------------------------------------------------------

    def _prepare(
        self, host: str, task_vars: dict[str, Any], options: ModuleCallOptions
    ) -> contextlib.AbstractContextManager[Any]:
        """What surrounds the TaskExecutor run of one call (the warm executor routes payloads here).

        The action plugins' commands take Ansible's own path, through the compat wrapper that
        waits for an ssh client the plugin abandoned on a failure (a host that went away). A
        command to run before the module (``before``) runs apart, now.
        """
        before = options.get("before")
        if before is not None and not before.done:
            before.run_apart()
        compat.route_low_level_execute_command(_ansible_own_path)
        return contextlib.nullcontext()

    def run(
        self, host: str, module: str, args: Mapping[str, Any], **options: Unpack[ModuleCallOptions]
    ) -> dict[str, Any]:
        no_log, check = options["no_log"], options["check"]
        secrets.add_from_vars(args)
        started = time.monotonic()
        with (
            _lock,
            _stdio_and_signals_kept(),
            ansible_output_logged(host, ansible_logger, display=True),
            vault_context(self._inventory._vault_secrets),
        ):
            self._configure()
            result = self._run(host, module, args, options)
        elapsed = (time.monotonic() - started) * 1000
        if result.get("unreachable"):
            reason = secrets.mask(str(result.get("msg") or "unreachable"))
            logger.info("%s %s %s -> unreachable (%.0f ms)", host, module, logged_args(args, no_log=no_log), elapsed)
            raise HostUnreachableError(host, reason)
        if no_log or result.get("_ansible_no_log"):
            result = _censored(result)
        result = {key: value for key, value in result.items() if not key.startswith("_ansible_")}
        if "ansible_facts" in result and not check and not result.get("failed"):
            self._facts.setdefault(host, {}).update(result["ansible_facts"])
        outcome = "failed" if result.get("failed") else "changed" if result.get("changed") else "ok"
        if result.get("skipped"):
            outcome = "skipped"
        logger.info("%s %s %s -> %s (%.0f ms)", host, module, logged_args(args, no_log=no_log), outcome, elapsed)
        for warning in result.get("warnings") or ():
            ansible_logger.warning("%s: %s: %s", host, module, secrets.mask(str(warning)))
        for deprecation in result.get("deprecations") or ():
            ansible_logger.debug("%s: %s: %s", host, module, secrets.mask(str(deprecation)))
        return result

    def _run(self, host: str, module: str, args: Mapping[str, Any], options: ModuleCallOptions) -> dict[str, Any]:
        from ansible.errors import AnsibleError
        from ansible.playbook.play import Play
        from ansible.playbook.play_context import PlayContext

        inventory_host = self._inventory.inventory_manager.get_host(host)
        if inventory_host is None:
            return {"failed": True, "msg": f"no host {host!r} in the inventory", "changed": False}
        loader = self._inventory.loader
        variable_manager = self._inventory.variable_manager
        task_ds: dict[str, Any] = {
            "name": f"pytest-mh-ansible: {module}",
            module: _as_template(args) if options["template"] else _as_data(args),
            "check_mode": options["check"],
            "diff": options["diff"],
            "no_log": options["no_log"],
        }
        try:
            play = Play().load(
                {"name": "pytest-mh-ansible", "hosts": host, "gather_facts": False, "tasks": [task_ds]},
                variable_manager=variable_manager,
                loader=loader,
            )
            task = play.tasks[0].block[0]
        except AnsibleError as err:  # an unknown module, bad task keywords, ...
            return {"failed": True, "changed": False, "msg": secrets.mask(_message(err))}
        task_vars = variable_manager.get_vars(play=play, host=inventory_host, task=task)
        extra_vars = options.get("task_vars")
        become, become_user = options["become"], options["become_user"]
        facts = {**self._facts.get(host, {}), **dict((extra_vars or {}).get("ansible_facts") or {})}
        for key, value in (extra_vars or {}).items():
            if key != "ansible_facts":
                task_vars[key] = value
        if facts:  # as the strategy stores gathered facts: without the ansible_ prefix
            task_vars["ansible_facts"] = {**dict(task_vars.get("ansible_facts") or {}), **_namespaced(facts)}
        # Connection variables beat task keywords, so a per-call become is given as variables.
        if become is not None:
            task_vars["ansible_become"] = become
        elif become_user is not None:
            task_vars["ansible_become"] = True
        if become_user is not None:
            task_vars["ansible_become_user"] = become_user
        if _hidden_on_target(args, options):
            task_vars["ansible_no_target_syslog"] = True  # the module gets _ansible_no_log: nothing in the journal
        if "ansible_control_path_dir" not in task_vars:
            if self._cp_dir is None:
                self._cp_dir = control_dirs.make("mh-cpx-")
            task_vars["ansible_control_path_dir"] = self._cp_dir
        play_context = PlayContext(play=play)
        with self._prepare(host, task_vars, options):
            raw = compat.execute_task(
                host=inventory_host,
                task=task,
                task_vars=task_vars,
                play_context=play_context,
                loader=loader,
                variable_manager=variable_manager,
                queue=_NullQueue(),
            )
        return {str(key): _plain_result(value) for key, value in raw.items()}


def _hidden_on_target(args: Mapping[str, Any], options: ModuleCallOptions) -> bool:
    """True when the call's arguments must not reach the target's journal or syslog.

    A module logs ``Invoked with <its arguments>`` on the target (journald, syslog) unless it is
    given ``_ansible_no_log``, which Ansible sets from ``no_log`` or ``ansible_no_target_syslog``.
    The second leaves the result as it is (``no_log`` hides it from the caller too), so it is what
    a call gets when an argument holds a value that this tool masks (a vault value, a secret-named
    argument, a known secret inside a string), or when the arguments are Jinja templates (their
    values are only known on the way to the host). Other calls still log their arguments.
    """
    if mask_args(args) != dict(args):
        return True
    return options["template"] and _has_jinja(args)


def _has_jinja(value: Any) -> bool:
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, Mapping):
        return any(_has_jinja(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(_has_jinja(item) for item in value)
    return False


def _forget_plain_collection_imports() -> None:
    """Drop ``ansible_collections.*`` modules that were imported from ``sys.path``, not by Ansible.

    A project's unit tests often import their collection's module_utils straight from a
    ``collections/`` directory on ``sys.path``. Such modules lack what Ansible's collection loader
    attaches (``_collection_meta``), and while they sit in ``sys.modules`` Ansible cannot resolve
    that collection's modules ("collection metadata was not loaded"). The test code keeps its own
    references; Ansible imports its own copies afterwards.
    """
    import sys

    names = [name for name in sys.modules if name == "ansible_collections" or name.startswith("ansible_collections.")]
    root = sys.modules.get("ansible_collections")
    if root is not None and not compat.imported_by_collection_loader(root):
        plain = names  # under a root from sys.path, nothing is Ansible's
    else:
        plain = [name for name in names if not compat.imported_by_collection_loader(sys.modules[name])]
    for name in plain:
        del sys.modules[name]
    if plain:
        logger.debug("forgot %d ansible_collections modules imported outside Ansible's loader", len(plain))


def _plain_result(value: Any) -> Any:
    """A result value as plain Python data: Ansible's error summaries become their text."""
    if isinstance(value, Mapping):
        return {str(k): _plain_result(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain_result(v) for v in value]
    text = compat.summary_text(value)  # a summary is neither a mapping nor a sequence
    if text is not None:
        return text
    plain = _plain(value)
    if plain is None or isinstance(plain, str | int | float | bool):
        return plain
    return str(plain)


def _as_data(value: Any) -> Any:
    """Arguments as plain data (paths become strings); Ansible treats such strings as untrusted."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        return {str(k): _as_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_as_data(v) for v in value]
    return value


def _as_template(value: Any) -> Any:
    """Arguments whose strings Ansible may render as templates (``template=True`` only)."""
    from ansible.template import trust_as_template

    value = _as_data(value)
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, Mapping):
        return {k: _as_template(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_template(v) for v in value]
    return value


def _namespaced(facts: Mapping[str, Any]) -> dict[str, Any]:
    from ansible.vars.clean import namespace_facts

    return dict(namespace_facts(facts)["ansible_facts"])


def _censored(result: Mapping[str, Any]) -> dict[str, Any]:
    kept = {key: result[key] for key in _NO_LOG_KEPT if key in result}
    return {**kept, "censored": _CENSORED, "msg": _CENSORED if result.get("failed") else ""}


def _message(err: BaseException) -> str:
    return str(getattr(err, "message", None) or err).strip()


@contextlib.contextmanager
def _stdio_and_signals_kept() -> Iterator[None]:
    """Put back fds 0-2 inheritability and the signal handlers, whatever Ansible did to them.

    pytest's capfd (and any subprocess a test starts) relies on inheritable stdio.
    """
    inheritable: list[bool | None] = []
    for fd in (0, 1, 2):
        try:
            inheritable.append(os.get_inheritable(fd))
        except OSError:
            inheritable.append(None)
    handlers = {signum: signal.getsignal(signum) for signum in _SIGNALS}
    try:
        yield
    finally:
        for fd, flag in zip((0, 1, 2), inheritable, strict=True):
            if flag is not None and os.get_inheritable(fd) != flag:
                os.set_inheritable(fd, flag)
        if threading.current_thread() is threading.main_thread():
            for signum, handler in handlers.items():
                if handler is not None and signal.getsignal(signum) is not handler:
                    signal.signal(signum, handler)


def _ansible_own_path(
    action: Any, original: compat.LowLevelExecute, cmd: str, kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The route of the standard executor: the command as Ansible runs it."""
    return dict(original(action, cmd, **kwargs))
