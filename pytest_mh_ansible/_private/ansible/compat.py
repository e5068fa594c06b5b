"""Every use of an ansible-core API that is not public, in one place, chosen by what the installed ansible-core offers.

ansible-core's private modules (``ansible._internal``), underscore attributes of its objects and
the signatures of its executor change between releases without notice. Each function here wraps
exactly one such use, detects the shape the installed ansible-core has (an attribute, a
parameter, a module) rather than comparing version numbers, and says in its docstring which
releases it was checked against. ``tests/unit/test_ansible_compat.py`` runs one test per function
against the real installed ansible-core (no fakes), so a new release that breaks one of them
fails there by name, and CI runs those tests on every supported release (2.19, 2.20, 2.21).

Nothing outside this module may touch an ansible-core private name (a test checks it).

Example::

    from pytest_mh_ansible._private.ansible import compat

    with compat.deferred_warnings(logger.warning, logger.debug):
        conn.exec_command("true")  # Ansible's warnings go to our logger, not to the terminal
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import inspect
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "action_basedir",
    "action_connection",
    "action_executable",
    "action_remote_user",
    "connection_play_context",
    "connection_shell",
    "deferred_warnings",
    "display_methods_replaced",
    "ensure_hostvars",
    "error_help_text",
    "execute_task",
    "forget_vars_files_cache",
    "imported_by_collection_loader",
    "inventory_sources",
    "isolate_paramiko_client",
    "open_connection",
    "paramiko_plugin_available",
    "plugin_load_name",
    "preload_ssh_agent",
    "reap_abandoned",
    "replace_vault_secrets_context",
    "resolve_connection_vars",
    "route_file_transfers",
    "route_low_level_execute_command",
    "split_ssh_args",
    "ssh_command_line",
    "summary_text",
    "value_origin",
    "vault_secrets_context",
]


class AnsibleCompatError(RuntimeError):
    """The installed ansible-core lacks something this module relies on: pytest-mh-ansible needs an update."""

    def __init__(self, what: str) -> None:
        import ansible.release

        super().__init__(
            f"pytest-mh-ansible does not support ansible-core {ansible.release.__version__}: {what} "
            "(supported: 2.19, 2.20, 2.21)"
        )


# --- messages: warnings, deprecations, error summaries ---------------------------------------------


@contextlib.contextmanager
def deferred_warnings(warn: Callable[[str], object], deprecate: Callable[[str], object]) -> Iterator[None]:
    """Collect the warnings and deprecations Ansible's Display would print while the block runs.

    When the block ends (even by an exception), each warning's text goes to ``warn`` and each
    deprecation's to ``deprecate``. Uses ``ansible._internal._display_utils.DeferredWarningContext``
    (2.19, 2.20, 2.21); without it Display prints as usual and nothing is collected.

    :param warn: Called with the text of each warning.
    :param deprecate: Called with the text of each deprecation.
    """
    try:
        from ansible._internal._display_utils import DeferredWarningContext, format_message
    except ImportError:  # pragma: no cover - an ansible-core without deferred warnings prints them
        yield
        return
    with DeferredWarningContext(variables={}) as ctx:
        try:
            yield
        finally:
            for deprecation in ctx.get_deprecation_warnings():
                deprecate(format_message(deprecation, False))
            for warning in ctx.get_warnings():
                warn(format_message(warning, False))


def summary_text(value: Any) -> str | None:
    """The text of an ansible-core message summary (a result's ``exception``, a warning), else None.

    ansible-core 2.19+ puts ``ansible.module_utils._internal._messages.SummaryBase`` objects into
    task results where earlier releases had strings.
    """
    summary = _summary_base()
    if summary is None or not isinstance(value, summary):
        return None
    from ansible._internal._display_utils import format_message

    return str(format_message(value, False))


@functools.cache
def _summary_base() -> type | None:
    """``SummaryBase`` of ansible-core 2.19+, looked up once: :func:`summary_text` sees every value of a result."""
    try:
        from ansible.module_utils._internal._messages import SummaryBase
    except ImportError:  # pragma: no cover - results hold plain strings
        return None
    summary: type = SummaryBase
    return summary


def error_help_text(err: BaseException) -> str | None:
    """The help text an ``AnsibleError`` carries (the script inventory plugin puts the script's stderr there)."""
    text = getattr(err, "_help_text", None)
    return text if isinstance(text, str) else None


@contextlib.contextmanager
def display_methods_replaced(**methods: Callable[..., Any]) -> Iterator[list[str]]:
    """Replace methods of Ansible's process-wide ``Display`` for the block, then put them back.

    Display is a singleton that writes straight to the process's stdout and stderr; an instance
    attribute shadows the class's method. Only methods this Display has are replaced; the block
    gets their names.

    :param methods: Method name to replacement, e.g. ``display=to_log``.
    """
    from ansible.utils.display import Display

    display = Display()
    names = [name for name in methods if callable(getattr(display, name, None))]
    saved = {name: display.__dict__[name] for name in names if name in display.__dict__}
    for name in names:
        setattr(display, name, methods[name])
    try:
        yield names
    finally:
        for name in names:
            if name in saved:
                setattr(display, name, saved[name])
            else:
                display.__dict__.pop(name, None)


# --- vault --------------------------------------------------------------------------------------------


def vault_secrets_context() -> Any:
    """The process-wide ``VaultSecretsContext`` that inline ``!vault`` values decrypt with, or None."""
    from ansible.parsing.vault import VaultSecretsContext

    return VaultSecretsContext.current(optional=True)


def replace_vault_secrets_context(context: Any) -> None:
    """Make ``context`` (a ``VaultSecretsContext`` or None) the process-wide vault context.

    ansible-core lets ``VaultSecretsContext.initialize`` run once per process; inventories loaded
    one after another need their own secrets, so the class attribute ``_current`` (2.19, 2.20,
    2.21) is set directly.

    :raises AnsibleCompatError: This ansible-core keeps the context elsewhere.
    """
    from ansible.parsing.vault import VaultSecretsContext

    if "_current" not in vars(VaultSecretsContext):
        raise AnsibleCompatError("VaultSecretsContext has no _current to swap the vault secrets")
    VaultSecretsContext._current = context


def value_origin(value: Any) -> tuple[str, int | None] | None:
    """Where a value was read (file, line), from the data tag ansible-core 2.19+ attaches, or None."""
    try:
        from ansible._internal._datatag._tags import Origin
    except ImportError:  # pragma: no cover - no data tags before 2.19
        return None
    origin = Origin.get_tag(value)
    if origin is None or not origin.path:
        return None
    return str(origin.path), origin.line_num


# --- inventory ----------------------------------------------------------------------------------------


def inventory_sources(manager: Any) -> list[str]:
    """The sources an ``InventoryManager`` was given (its ``_sources``), to tell them from nested ones."""
    return list(getattr(manager, "_sources", None) or ())


def forget_vars_files_cache() -> None:
    """Make group_vars/host_vars be looked up afresh, as a new ``ansible-playbook`` would.

    The builtin host_group_vars plugin caches, per process, which vars files exist and which
    directories do not (module globals ``FOUND``, ``NAK``, ``CANONICAL_PATHS`` in 2.19-2.21).
    """
    import sys

    module = sys.modules.get("ansible.plugins.vars.host_group_vars")
    for name in ("FOUND", "NAK", "CANONICAL_PATHS"):
        cache = getattr(module, name, None)
        if isinstance(cache, dict | set):
            cache.clear()


def ensure_hostvars(variable_manager: Any, inventory: Any, loader: Any) -> None:
    """Make ``hostvars`` defined for templates, as ``TaskQueueManager.run`` does (once per variable manager).

    A ``HostVars`` registers itself on the variable manager (its ``_hostvars``) when created.
    """
    if getattr(variable_manager, "_hostvars", None) is not None:
        return
    from ansible.vars.hostvars import HostVars

    HostVars(inventory=inventory, variable_manager=variable_manager, loader=loader)


def imported_by_collection_loader(module: Any) -> bool:
    """True when Ansible's collection loader imported ``module`` (an ``ansible_collections.*`` module)."""
    loader_module = type(getattr(module, "__loader__", None)).__module__
    return loader_module.startswith("ansible.utils.collection_loader")


# --- task execution -----------------------------------------------------------------------------------


_SSH_AGENT_MODULE = "ansible._internal._ssh._ssh_agent"


def preload_ssh_agent() -> None:
    """Import ansible-core's ssh-agent client once per process, with cryptography's DSA deprecation silenced.

    ansible-core 2.19, 2.20 and 2.21 import that module from the ssh connection plugin and from
    the task executor, and it imports cryptography's DSA names, which cryptography 51 deprecates
    with a ``CryptographyDeprecationWarning`` at import. Only ansible-core can act on it, yet a
    suite run with ``-W error`` or ``filterwarnings = error`` would fail on its first command. A
    module runs once per process, so silencing this one import silences the warning for good and
    leaves every other warning, and the filters, as they were. Without the module (an older or a
    newer ansible-core) there is nothing to do.
    """
    if _SSH_AGENT_MODULE in sys.modules:
        return
    with warnings.catch_warnings():
        with contextlib.suppress(ImportError):
            from cryptography.utils import CryptographyDeprecationWarning

            warnings.simplefilter("ignore", CryptographyDeprecationWarning)
        with contextlib.suppress(ImportError):
            importlib.import_module(_SSH_AGENT_MODULE)


def execute_task(
    *,
    host: Any,
    task: Any,
    task_vars: dict[str, Any],
    play_context: Any,
    loader: Any,
    variable_manager: Any,
    queue: Any,
) -> dict[str, Any]:
    """Run one task on one host with ansible-core's ``TaskExecutor``, as a worker process would.

    2.19 and 2.20: ``TaskContext(task)`` around ``TaskExecutor(host, task, job_vars, ...).run()``,
    which returns the result dict. 2.21: ``TaskContext.create(task=, task_vars=, host_name=)``
    carries the task and its variables, ``TaskExecutor(host, play_context, ...)`` takes neither,
    and ``run()`` returns a ``UnifiedTaskResult``, turned into the same dict here (with
    ``_ansible_no_log`` and every other key a callback would see).

    :returns: The task result, keys as ansible-core 2.19 returns them.
    """
    preload_ssh_agent()
    from ansible._internal import _task
    from ansible.executor.task_executor import TaskExecutor
    from ansible.plugins import loader as plugin_loader

    shared = plugin_loader.get_plugin_loader_namespace()
    takes_task = "task" in inspect.signature(TaskExecutor).parameters
    create = getattr(_task.TaskContext, "create", None)
    if takes_task:
        with _task.TaskContext(task):
            executor = TaskExecutor(host, task, task_vars, play_context, loader, shared, queue, variable_manager)
            return dict(executor.run())
    if create is None:
        raise AnsibleCompatError("TaskExecutor takes no task, and TaskContext has no create()")
    with create(task=task, task_vars=task_vars, host_name=host.name):
        result = TaskExecutor(host, play_context, loader, shared, queue, variable_manager).run()
        if isinstance(result, dict):  # pragma: no cover - not seen: a dict from the new signature
            return dict(result)
        return dict(result.as_result_dict(for_round_trip=True))


LowLevelExecute = Callable[..., dict[str, Any]]
"""``ActionBase._low_level_execute_command`` as ansible-core defines it: ``(action, cmd, **kwargs) -> result``."""

Route = Callable[[Any, LowLevelExecute, str, dict[str, Any]], dict[str, Any]]
"""Our handler: ``(action, original, cmd, kwargs) -> result``; ``original(action, cmd, **kwargs)`` is Ansible's."""

_route_lock = threading.Lock()
_routed: list[Route] = []


def route_low_level_execute_command(route: Route) -> None:
    """Send every ``ActionBase._low_level_execute_command`` call of this process through ``route``.

    That private method is where an action plugin runs a command (a pipelined module payload
    among them) on the target. It is replaced once per process by a wrapper that names every
    argument as the installed ansible-core's signature does (2.21 added ``process_result``),
    so ``route`` gets a dict of keyword arguments whatever the caller passed positionally.
    A second call replaces the route. A command that fails has the ssh clients it left behind
    waited for (:func:`reap_abandoned`), whatever the route.

    :param route: The handler; it calls ``original`` for what it does not serve itself.
    :raises AnsibleCompatError: ActionBase has no such method.
    """
    from ansible.plugins.action import ActionBase

    with _route_lock:
        if _routed:
            _routed[0] = route
            return
        original = getattr(ActionBase, "_low_level_execute_command", None)
        if original is None:
            raise AnsibleCompatError("ActionBase has no _low_level_execute_command")
        signature = inspect.signature(original)

        def _low_level_execute_command(self: Any, cmd: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
            bound = signature.bind_partial(self, cmd, *args, **kwargs).arguments
            named = {name: value for name, value in bound.items() if name not in ("self", "cmd")}
            try:
                return _routed[0](self, original, cmd, named)
            except Exception as err:
                # Before the task executor turns the error into a result and drops it (see reap_abandoned).
                reap_abandoned(err)
                raise

        _low_level_execute_command.__wrapped__ = original  # type: ignore[attr-defined]
        ActionBase._low_level_execute_command = _low_level_execute_command
        _routed.append(route)


FileTransfer = Callable[[Any, str, str], Any]
"""A connection plugin's ``put_file``/``fetch_file``: ``(connection, in_path, out_path) -> anything``."""

TransferRoute = Callable[[Any, FileTransfer, str, str, str], Any]
"""Our handler: ``(connection, original, name, in_path, out_path)``; ``name`` is ``put_file`` or ``fetch_file``."""

_transfers_routed: list[TransferRoute] = []


def route_file_transfers(route: TransferRoute) -> None:
    """Send every ``put_file`` and ``fetch_file`` of the ssh connection plugin in this process through ``route``.

    An action plugin transfers files by calling them on its connection (``_transfer_file``,
    the fetch action), each a new ``sftp``/``scp`` client. Both methods of the ssh plugin's class
    (``ansible.plugins.connection.ssh.Connection``, the class the plugin loader gives for
    ``ssh``; 2.19, 2.20, 2.21) are replaced once per process by wrappers that call ``route``
    with the original; a second call replaces the route. Other connection plugins keep theirs.

    :param route: The handler; it calls ``original(connection, in_path, out_path)`` for what it does not serve.
    """
    preload_ssh_agent()  # the ssh plugin imports it: without its deprecation warning
    from ansible.plugins.connection import ssh

    with _route_lock:
        if _transfers_routed:
            _transfers_routed[0] = route
            return
        for name in ("put_file", "fetch_file"):
            original = getattr(ssh.Connection, name)

            def _transfer(
                self: Any, in_path: str, out_path: str, *, _name: str = name, _original: FileTransfer = original
            ) -> Any:
                return _transfers_routed[0](self, _original, _name, in_path, out_path)

            _transfer.__name__ = name
            _transfer.__wrapped__ = original  # type: ignore[attr-defined]
            setattr(ssh.Connection, name, _transfer)
        _transfers_routed.append(route)


def action_connection(action: Any) -> Any:
    """The connection plugin an action plugin runs its commands over."""
    return action._connection


def action_remote_user(action: Any) -> str | None:
    """The user an action plugin logs in as (None: the connection's default)."""
    user = action._get_remote_user()
    return str(user) if user else None


def action_basedir(action: Any) -> str:
    """The play's base directory, where the local connection runs commands."""
    return str(action._loader.get_basedir())


def action_executable(action: Any) -> str | None:
    """The shell an action plugin wraps commands in (``ansible_shell_executable``), or None."""
    executable = action._play_context.executable
    return str(executable) if executable else None


# --- connection plugins ----------------------------------------------------------------------------


def plugin_load_name(plugin: Any) -> str:
    """The name a plugin was loaded under (``ansible.builtin.ssh``, ``ssh``, ``paramiko``, ...)."""
    return str(getattr(plugin, "_load_name", None) or getattr(plugin, "transport", ""))


def resolve_connection_vars(conn: Any, variables: dict[str, Any], templar: Any) -> dict[str, Any]:
    """The variables a connection plugin takes its options from, templated, as ``TaskExecutor`` gives them."""
    return dict(conn._resolve_option_variables(variables, templar))


def connection_shell(conn: Any) -> Any:
    """The shell plugin a connection plugin builds commands with."""
    return conn._shell


def connection_play_context(conn: Any) -> Any:
    """The ``PlayContext`` a connection plugin was made with (the fallback of its address and password)."""
    return conn._play_context


def open_connection(conn: Any) -> None:
    """Connect now (every plugin's ``_connect``), rather than on the first command."""
    conn._connect()


def split_ssh_args(text: str) -> list[str]:
    """ssh arguments from an option string, as the ssh plugin splits ``ssh_args`` and ``ssh_extra_args``."""
    from ansible.plugins.connection import ConnectionBase

    return [str(arg) for arg in ConnectionBase._split_ssh_args(text)]


def ssh_command_line(conn: Any, *args: str) -> list[bytes]:
    """The ssh plugin's full ``ssh`` command line (options, ControlPath, password mechanism) for ``args``."""
    return [
        arg if isinstance(arg, bytes) else str(arg).encode()
        for arg in conn._build_command(conn.get_option("ssh_executable"), "ssh", *args)
    ]


def paramiko_plugin_available() -> bool:
    """True when ansible-core still ships the paramiko connection plugin (2.19, 2.20; removed in 2.21)."""
    return importlib.util.find_spec("ansible.plugins.connection.paramiko_ssh") is not None


def isolate_paramiko_client(conn: Any) -> None:
    """Give one paramiko plugin its own SSH client instead of the process-wide cached one.

    The plugin caches clients per address and user in a module-level dict (keyed by its
    ``_cache_key()``), so two hosts on one address with another port or password would share a
    client; an sftp client is cached the same way (``_connect_sftp``).
    """
    import uuid

    cache_key = getattr(conn, "_cache_key", None)
    if callable(cache_key):
        key = f"{cache_key()}mh-{uuid.uuid4().hex}"
        conn._cache_key = lambda: key
    if callable(getattr(conn, "_connect_sftp", None)):
        conn._connect_sftp = lambda: conn.ssh.open_sftp()  # noqa: PLW0108 - conn.ssh is set on connecting


def reap_abandoned(err: BaseException) -> None:
    """Wait for the ssh clients a connection plugin started and gave up on (it terminated one and raised).

    The ssh plugin terminates its client without waiting on some failures (a become prompt that
    never came, a host that went away mid-call, "Data could not be sent" when writing the payload
    found the client exiting): the process stays a zombie, and its ``Popen`` and pipes warn
    (ResourceWarning, an error under ``-W error``) when collected, in whatever test runs then.
    Every ``Popen`` still in the frames of ``err``'s traceback is waited for (killed after 5 s) and
    its pipes are closed. Checked against ansible-core 2.19, 2.20 and 2.21.
    """
    import subprocess

    tb = err.__traceback__
    while tb is not None:
        for value in list(tb.tb_frame.f_locals.values()):
            if isinstance(value, subprocess.Popen) and value.returncode is None:
                try:
                    value.wait(5)
                except subprocess.TimeoutExpired:
                    value.kill()
                    value.wait()
                for stream in (value.stdin, value.stdout, value.stderr):
                    if stream is not None:
                        with contextlib.suppress(OSError):
                            stream.close()
        tb = tb.tb_next
