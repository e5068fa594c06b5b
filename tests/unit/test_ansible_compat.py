"""Each private ansible-core API we use, tried against the installed ansible-core (no fakes).

One test per function of ``_private/ansible/compat.py``: when a new ansible-core release moves or
changes one of them, the test named after it fails here, in CI's run on that release, rather
than a test run somewhere breaking in a way nobody can trace.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ansible.errors import AnsibleError
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.parsing.vault import EncryptedString, VaultLib, VaultSecret, VaultSecretsContext
from ansible.playbook.play_context import PlayContext
from ansible.plugins.loader import connection_loader
from ansible.template import Templar
from ansible.utils.display import Display
from ansible.vars.manager import VariableManager

from pytest_mh_ansible._private.ansible import compat, executor, warm
from pytest_mh_ansible._private.ansible.runtime import ansible_output_logged, init_ansible

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_mh_ansible"


@pytest.fixture(scope="module", autouse=True)
def _ansible() -> None:
    init_ansible()


@pytest.fixture(scope="module")
def local() -> Iterator[dict[str, Any]]:
    """A real inventory with one local host, its variable manager and a loader."""
    executor._forget_plain_collection_imports()
    loader = DataLoader()
    inventory = InventoryManager(loader, sources="localhost,")
    variable_manager = VariableManager(loader=loader, inventory=inventory)
    yield {"loader": loader, "inventory": inventory, "variable_manager": variable_manager}
    loader.cleanup_all_tmp_files()


def _run(local: dict[str, Any], task: dict[str, Any]) -> dict[str, Any]:
    """One task on the local host through compat.execute_task, as the standard executor runs it."""
    from ansible import context
    from ansible.module_utils.common.collections import ImmutableDict
    from ansible.playbook.play import Play

    if "connection" not in context.CLIARGS:
        context.CLIARGS = ImmutableDict({**dict(context.CLIARGS), "connection": "local", "forks": 1, "verbosity": 0})
    loader, inventory, variable_manager = local["loader"], local["inventory"], local["variable_manager"]
    play = Play().load(
        {"hosts": "localhost", "gather_facts": False, "tasks": [task]}, variable_manager=variable_manager, loader=loader
    )
    the_task = play.tasks[0].block[0]
    host = inventory.get_host("localhost")
    task_vars = variable_manager.get_vars(play=play, host=host, task=the_task)
    task_vars.update(ansible_connection="local", ansible_python_interpreter=sys.executable, ansible_pipelining=True)
    with ansible_output_logged("localhost", executor.ansible_logger, display=True):
        return compat.execute_task(
            host=host,
            task=the_task,
            task_vars=task_vars,
            play_context=PlayContext(play=play),
            loader=loader,
            variable_manager=variable_manager,
            queue=executor._NullQueue(),
        )


@pytest.fixture(scope="module")
def routed(local: dict[str, Any]) -> dict[str, Any]:
    """A module run locally with every low-level command routed through a recording route."""
    calls: list[tuple[Any, str, dict[str, Any]]] = []

    def route(action: Any, original: compat.LowLevelExecute, cmd: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        calls.append((action, cmd, dict(kwargs)))
        return dict(original(action, cmd, **kwargs))

    compat.route_low_level_execute_command(route)
    try:
        result = _run(local, {"ansible.builtin.command": {"cmd": "echo routed"}})
    finally:
        compat.route_low_level_execute_command(warm._dispatch)  # what the warm executor installs
    return {"calls": calls, "result": result}


def _ssh_plugin(variables: dict[str, Any] | None = None) -> Any:
    play_context = PlayContext()
    conn = connection_loader.get("ssh", play_context, new_stdin=None)
    templar = Templar(loader=DataLoader(), variables=variables or {})
    conn.set_options(task_keys={}, var_options=compat.resolve_connection_vars(conn, variables or {}, templar))
    return conn


# --- messages -------------------------------------------------------------------------------------------


def test_compat__deferred_warnings_collects_instead_of_printing(capsys: pytest.CaptureFixture[str]) -> None:
    warnings: list[str] = []
    deprecations: list[str] = []
    with compat.deferred_warnings(warnings.append, deprecations.append):
        Display().warning("mh compat: a warning")
        Display().deprecated("mh compat: an old thing", version="9.99", collection_name="mh_ansible.rollback")
    assert any("mh compat: a warning" in text for text in warnings)
    assert any("mh compat: an old thing" in text for text in deprecations)
    out, err = capsys.readouterr()
    assert "mh compat" not in out + err


def test_compat__summary_text_of_a_failed_task_exception(local: dict[str, Any]) -> None:
    result = _run(local, {"ansible.builtin.debug": {"msg": "a", "var": "b"}})
    assert result["failed"] is True
    text = compat.summary_text(result["exception"])  # an ErrorSummary on 2.19+, not a string
    assert text
    assert "Task failed" in text
    assert compat.summary_text(result["msg"]) is None


def test_compat__error_help_text() -> None:
    assert compat.error_help_text(AnsibleError("it failed", help_text="try this")) == "try this"
    assert compat.error_help_text(AnsibleError("it failed")) is None
    assert compat.error_help_text(ValueError("not Ansible's")) is None


def test_compat__display_methods_replaced_and_restored() -> None:
    seen: list[str] = []
    display = Display()
    with compat.display_methods_replaced(warning=lambda msg, *a, **k: seen.append(msg), no_such_method=print) as names:
        display.warning("mh compat: captured")
    assert names == ["warning"]
    assert seen == ["mh compat: captured"]
    assert "warning" not in display.__dict__
    assert display.warning.__func__ is Display.warning  # type: ignore[attr-defined]


# --- vault ----------------------------------------------------------------------------------------------


def test_compat__vault_secrets_context_swapped_decrypts_inline_values() -> None:
    secret = VaultSecret(b"mh-compat-password")
    ciphertext = VaultLib([("default", secret)]).encrypt("the plain text").decode()
    saved = compat.vault_secrets_context()
    compat.replace_vault_secrets_context(VaultSecretsContext([("default", secret)]))
    try:
        assert compat.vault_secrets_context() is not saved
        assert str(EncryptedString(ciphertext=ciphertext)) == "the plain text"
    finally:
        compat.replace_vault_secrets_context(saved)
    assert compat.vault_secrets_context() is saved


def test_compat__value_origin_of_a_loaded_yaml_value(tmp_path: Path) -> None:
    path = tmp_path / "vars.yml"
    path.write_text("first: 1\nsecond: two\n")
    data = DataLoader().load_from_file(str(path))
    assert compat.value_origin(data["second"]) == (str(path), 2)
    assert compat.value_origin("untagged") is None


# --- inventory ------------------------------------------------------------------------------------------


def test_compat__inventory_sources() -> None:
    manager = InventoryManager(DataLoader(), sources=["mh1,mh2,"], parse=False)
    assert compat.inventory_sources(manager) == ["mh1,mh2,"]


def test_compat__forget_vars_files_cache_clears_host_group_vars_caches() -> None:
    module = importlib.import_module("ansible.plugins.vars.host_group_vars")
    caches = [getattr(module, name) for name in ("FOUND", "NAK", "CANONICAL_PATHS")]
    assert all(isinstance(cache, dict | set) for cache in caches)
    module.FOUND["mh-compat"] = ["x"]
    module.NAK.add("mh-compat")
    compat.forget_vars_files_cache()
    assert "mh-compat" not in module.FOUND
    assert "mh-compat" not in module.NAK


def test_compat__ensure_hostvars_defines_hostvars() -> None:
    loader = DataLoader()
    inventory = InventoryManager(loader, sources="mh1,")
    variable_manager = VariableManager(loader=loader, inventory=inventory)
    compat.ensure_hostvars(variable_manager, inventory, loader)
    variables = variable_manager.get_vars(host=inventory.get_host("mh1"), include_hostvars=True)
    assert "mh1" in variables["hostvars"]


def test_compat__imported_by_collection_loader() -> None:
    module = importlib.import_module("ansible_collections.ansible.builtin")
    assert compat.imported_by_collection_loader(module)
    assert not compat.imported_by_collection_loader(os)


# --- task execution -------------------------------------------------------------------------------------


def test_compat__execute_task_returns_the_result_dict(local: dict[str, Any]) -> None:
    result = _run(local, {"ansible.builtin.command": {"cmd": "echo hello"}, "no_log": True})
    assert result["stdout"] == "hello"
    assert result["rc"] == 0
    assert result["changed"] is True
    assert result.get("failed", False) is False
    assert result["_ansible_no_log"] is True


def test_compat__route_low_level_execute_command_names_every_argument(routed: dict[str, Any]) -> None:
    assert routed["result"]["stdout"] == "routed"
    payloads = [kwargs for _, _, kwargs in routed["calls"] if b"_ansiballz_main(" in (kwargs.get("in_data") or b"")]
    assert len(payloads) == 1  # the pipelined module payload, on stdin
    assert {"sudoable", "in_data"} <= set(payloads[0])


def test_compat__action_connection(routed: dict[str, Any]) -> None:
    action = routed["calls"][0][0]
    assert compat.plugin_load_name(compat.action_connection(action)).endswith("local")


def test_compat__action_remote_user(routed: dict[str, Any]) -> None:
    user = compat.action_remote_user(routed["calls"][0][0])
    assert user is None or isinstance(user, str)


def test_compat__action_basedir(routed: dict[str, Any]) -> None:
    assert os.path.isdir(compat.action_basedir(routed["calls"][0][0]))


def test_compat__action_executable(routed: dict[str, Any]) -> None:
    assert compat.action_executable(routed["calls"][0][0]) == "/bin/sh"


# --- connection plugins ---------------------------------------------------------------------------------


def test_compat__plugin_load_name() -> None:
    assert compat.plugin_load_name(_ssh_plugin()).rpartition(".")[2] == "ssh"
    local_plugin = connection_loader.get("ansible.builtin.local", PlayContext(), new_stdin=None)
    assert compat.plugin_load_name(local_plugin).rpartition(".")[2] == "local"


def test_compat__resolve_connection_vars_feeds_the_plugin_options() -> None:
    conn = _ssh_plugin({"ansible_port": 2222, "ansible_user": "mh", "unrelated": 1})
    assert conn.get_option("port") == 2222
    assert conn.get_option("remote_user") == "mh"


def test_compat__connection_shell() -> None:
    shell = compat.connection_shell(_ssh_plugin())
    assert shell.quote("a b") == "'a b'"


def test_compat__connection_play_context() -> None:
    play_context = PlayContext()
    conn = connection_loader.get("ssh", play_context, new_stdin=None)
    assert compat.connection_play_context(conn) is play_context


def test_compat__open_connection() -> None:
    conn = connection_loader.get("local", PlayContext(), new_stdin=None)
    compat.open_connection(conn)
    assert conn.connected
    conn.close()


def test_compat__split_ssh_args() -> None:
    assert compat.split_ssh_args('-o Foo=1 -o Bar="foo bar"') == ["-o", "Foo=1", "-o", "Bar=foo bar"]


def test_compat__ssh_command_line() -> None:
    conn = _ssh_plugin({"ansible_ssh_common_args": "-o MhCompat=yes", "ansible_host": "10.213.0.99"})
    argv = compat.ssh_command_line(conn, "10.213.0.99", "true")
    assert all(isinstance(arg, bytes) for arg in argv)
    assert argv[0].endswith(b"ssh")
    assert argv[-2:] == [b"10.213.0.99", b"true"]
    assert b"MhCompat=yes" in argv


def test_compat__paramiko_plugin_available_matches_the_loader() -> None:
    loaded = connection_loader.get("paramiko", PlayContext(), new_stdin=None)
    assert compat.paramiko_plugin_available() is (loaded is not None)


def test_compat__isolate_paramiko_client_gives_each_plugin_its_own_key() -> None:
    if not compat.paramiko_plugin_available():
        # ansible-core 2.21 removed the plugin: nothing to isolate, and the loader finds nothing.
        assert connection_loader.get("paramiko", PlayContext(), new_stdin=None) is None
        return
    first = connection_loader.get("paramiko", PlayContext(), new_stdin=None)
    second = connection_loader.get("paramiko", PlayContext(), new_stdin=None)
    for conn in (first, second):
        conn.set_options(task_keys={}, var_options={"ansible_host": "10.213.0.99", "ansible_user": "mh"})
    shared = first._cache_key()
    assert shared == second._cache_key()  # what the plugin does by itself: one client for both
    compat.isolate_paramiko_client(first)
    compat.isolate_paramiko_client(second)
    assert first._cache_key() != second._cache_key()
    assert first._cache_key().startswith(shared)


# --- the rule -------------------------------------------------------------------------------------------

_PRIVATE_USES = re.compile(
    r"ansible\._internal|ansible\.module_utils\._internal|VaultSecretsContext\._current|\._cache_key|"
    r"\._low_level_execute_command|\._resolve_option_variables|\._split_ssh_args|\._build_command|\._load_name|"
    r"\b(?:conn|action|plugin|connection)\._(?!transport\b|mh_)[a-z]|[.\"']_help_text|\._hostvars\b|"
    r"\.(?:FOUND|NAK|CANONICAL_PATHS)\b"
)
"""Names of private ansible-core APIs (``conn._transport`` and ``conn._mh_*`` are our Connection's, not Ansible's)."""


def test_compat__no_private_ansible_api_outside_the_compat_module() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if (
            relative.as_posix() in ("_private/ansible/compat.py", "_private/ansible/warm_agent.py")
            or "_data" in relative.parts
        ):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if _PRIVATE_USES.search(line) and not line.lstrip().startswith("#"):
                offenders.append(f"{relative}:{number}: {line.strip()}")
    assert offenders == []


def test_compat__preload_ssh_agent_keeps_cryptography_deprecations_out_of_error_mode() -> None:
    """A fresh interpreter with warnings as errors connects through the ssh plugin and the task executor.

    With cryptography 51 or later, importing either without the preload raises
    ``CryptographyDeprecationWarning`` (DSA) from inside ansible-core.
    """
    program = (
        "import warnings\n"
        "from pytest_mh_ansible._private.ansible import compat\n"
        "before = list(warnings.filters)\n"
        "compat.preload_ssh_agent()\n"
        "assert warnings.filters == before, 'the filters were changed'\n"
        "import ansible.plugins.connection.ssh, ansible.executor.task_executor\n"
        "warnings.warn('still an error', DeprecationWarning)\n"
    )
    done = subprocess.run([sys.executable, "-W", "error", "-c", program], capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stderr
    assert done.stderr.rstrip().endswith("DeprecationWarning: still an error"), done.stderr


def test_reap_abandoned__waits_for_a_client_left_in_the_failing_frames() -> None:
    """What the ssh plugin leaves after some failures: a client it terminated and never waited for."""
    from pytest_mh_ansible._private.ansible import compat

    def plugin_call() -> None:
        client = subprocess.Popen(["sleep", "0.2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        client.terminate()
        raise RuntimeError(f"the host went away ({client.pid})")

    with pytest.raises(RuntimeError) as caught:
        plugin_call()
    tb, left = caught.value.__traceback__, []
    while tb is not None:
        left += [v for v in tb.tb_frame.f_locals.values() if isinstance(v, subprocess.Popen)]
        tb = tb.tb_next
    assert [client.returncode for client in left] == [None]
    compat.reap_abandoned(caught.value)
    assert left[0].returncode is not None
    assert left[0].stdin is not None
    assert left[0].stdin.closed
    assert left[0].stdout is not None
    assert left[0].stdout.closed


def test_routed_command__ssh_client_left_by_a_failing_command_is_waited_for() -> None:
    """Ansible's ssh plugin raises "Data could not be sent" without waiting for the client it
    started when writing the payload finds it exiting (the host's sshd went away); the task
    executor then drops the error, and the client's Popen and pipes warn when collected. Every
    routed command (warm or standard executor) has them waited for and closed first."""
    from ansible.plugins.action import ActionBase

    started: list[subprocess.Popen[bytes]] = []

    def route(action: Any, original: compat.LowLevelExecute, cmd: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        client = subprocess.Popen(["sleep", "0.2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        started.append(client)
        raise ConnectionError(f"Data could not be sent to remote host (client {client.pid} exiting)")

    compat.route_low_level_execute_command(route)
    try:
        with pytest.raises(ConnectionError):
            ActionBase._low_level_execute_command(object(), "true")  # type: ignore[arg-type]
    finally:
        compat.route_low_level_execute_command(warm._dispatch)  # what the warm executor installs
    assert started[0].returncode is not None
    assert started[0].stdin is not None
    assert started[0].stdin.closed
