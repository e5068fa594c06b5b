"""Module calls on a lab host through the session's in-process executor: results, modes, become, errors, hygiene."""

from __future__ import annotations

import base64
import importlib
import logging
import os
import signal
import subprocess
from collections.abc import Iterator

import pytest

from pytest_mh_ansible._private.ansible.executor import StandardExecutor
from pytest_mh_ansible.errors import HostUnreachableError, ModuleError
from pytest_mh_ansible.lab import dummy_init_script
from pytest_mh_ansible.modules import HostModules

pytestmark = pytest.mark.integration

DUMMY_SERVICE = "mhmoddummy"
DUMMY_SCRIPT = dummy_init_script(DUMMY_SERVICE, "dummy service of the module tests")


def _stdout(server: HostModules, command: str) -> str:
    return str(server.run("ansible.builtin.command", cmd=command).raw["stdout"])


# --- results ------------------------------------------------------------------------------------


def test_ping__result_fields(server: HostModules) -> None:
    result = server.run("ansible.builtin.ping")
    assert (result.host, result.module) == ("server1", "ansible.builtin.ping")
    assert (result.changed, result.failed, result.skipped, result.rc, result.diff) == (False, False, False, None, [])
    assert result.raw["ping"] == "pong"
    assert not any(key.startswith("_ansible_") for key in result.raw)


def test_command__rc_and_stdout(server: HostModules) -> None:
    result = server.run("ansible.builtin.command", cmd="echo hello")
    assert result.rc == 0
    assert result.raw["stdout"] == "hello"
    assert result.changed


def test_copy_content__changed_then_unchanged_with_diff(server: HostModules, workdir: str) -> None:
    dest = f"{workdir}/app.conf"
    first = server.run("ansible.builtin.copy", dest=dest, content="debug = 1\n")
    assert first.changed
    assert first.diff
    assert first.diff[0]["after"] == "debug = 1\n"
    second = server.run("ansible.builtin.copy", dest=dest, content="debug = 1\n")
    assert not second.changed
    assert _stdout(server, f"cat {dest}") == "debug = 1"


def test_file__directory_and_mode(server: HostModules, workdir: str) -> None:
    result = server.run("ansible.builtin.file", path=f"{workdir}/d", state="directory", mode="0750")
    assert result.changed
    assert result.raw["mode"] == "0750"
    assert not server.run("ansible.builtin.file", path=f"{workdir}/d", state="directory", mode="0750").changed


def test_lineinfile__diff(server: HostModules, workdir: str) -> None:
    path = f"{workdir}/lines"
    server.run("ansible.builtin.copy", dest=path, content="a\n")
    result = server.run("ansible.builtin.lineinfile", path=path, line="b")
    assert result.changed
    assert result.diff
    assert result.diff[0]["before"] == "a\n"
    assert result.diff[0]["after"] == "a\nb\n"


def test_stat(server: HostModules) -> None:
    result = server.run("ansible.builtin.stat", path="/etc/hostname")
    assert result.raw["stat"]["exists"]
    assert not result.changed


def test_user__check_mode_changes_nothing(server: HostModules) -> None:
    result = server.run("ansible.builtin.user", name="mhmodghostuser", state="present", check=True)
    assert result.changed
    with pytest.raises(ModuleError, match="rc=2"):  # getent: no such key
        server.run("ansible.builtin.command", cmd="getent passwd mhmodghostuser")


def test_check_mode__copy_predicts_without_writing(server: HostModules, workdir: str) -> None:
    result = server.run("ansible.builtin.copy", dest=f"{workdir}/never", content="x", check=True)
    assert result.changed
    assert not server.run("ansible.builtin.stat", path=f"{workdir}/never").raw["stat"]["exists"]


@pytest.fixture
def dummy_service(server: HostModules) -> Iterator[str]:
    """An LSB init script on the sysv host, stopped and removed afterwards."""
    server.run("ansible.builtin.copy", dest=f"/etc/init.d/{DUMMY_SERVICE}", content=DUMMY_SCRIPT, mode="0755")
    yield DUMMY_SERVICE
    server.run("ansible.builtin.service", name=DUMMY_SERVICE, state="stopped")
    server.run("ansible.builtin.file", path=f"/etc/init.d/{DUMMY_SERVICE}", state="absent")


def test_service__sysv_start_restart_with_cached_facts(
    server: HostModules, dummy_service: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pytest_mh_ansible.modules")
    assert server.run("ansible.builtin.service", name=dummy_service, state="started").changed
    assert not server.run("ansible.builtin.service", name=dummy_service, state="started").changed
    assert server.run("ansible.builtin.service", name=dummy_service, state="restarted").changed
    assert server.facts()["ansible_service_mgr"]  # the lab reports its own init ("lab-init")
    setups = [r for r in caplog.records if "ansible.builtin.setup" in r.getMessage()]
    assert len(setups) <= 1  # gathered at most once (by the first service call), never per call
    assert server.run("ansible.builtin.command", cmd=f"/etc/init.d/{dummy_service} status").rc == 0


# --- become -------------------------------------------------------------------------------------


def test_become__root_from_the_lab_user(server_user: HostModules) -> None:
    assert _stdout(server_user, "id -un") == "labuser"
    assert str(server_user.run("ansible.builtin.command", cmd="id -un", become=True).raw["stdout"]) == "root"


def test_become_user__implies_become(server_user: HostModules) -> None:
    result = server_user.run("ansible.builtin.command", cmd="id -un", become_user="nobody")
    assert result.raw["stdout"] == "nobody"


def test_become__writes_a_root_owned_file(server_user: HostModules, server: HostModules, workdir: str) -> None:
    server_user.run("ansible.builtin.copy", dest=f"{workdir}/by-root", content="x", become=True)
    assert server.run("ansible.builtin.stat", path=f"{workdir}/by-root").raw["stat"]["pw_name"] == "root"


# --- errors -------------------------------------------------------------------------------------


def test_failing_module__error_names_host_module_and_message(server: HostModules) -> None:
    with pytest.raises(ModuleError) as info:
        server.run("ansible.builtin.copy", dest="/nonexistent-dir/x", content="y")
    err = info.value
    assert (err.host, err.module) == ("server1", "ansible.builtin.copy")
    text = str(err)
    assert text.startswith("server1: module ansible.builtin.copy failed: ")
    assert "/nonexistent-dir" in text
    assert err.result["failed"] is True


def test_failing_command__error_has_rc_and_stderr(server: HostModules) -> None:
    with pytest.raises(ModuleError, match=r"rc=2; stderr: .*No such file"):
        server.run("ansible.builtin.command", cmd="ls /nonexistent-path")


def test_unknown_module__error(server: HostModules) -> None:
    with pytest.raises(ModuleError, match=r"server1: module nosuch\.collection\.thing failed: .*couldn't resolve"):
        server.run("nosuch.collection.thing", x=1)


def test_unreachable_host(ghost: HostModules) -> None:
    with pytest.raises(HostUnreachableError) as info:
        ghost.run("ansible.builtin.ping")
    assert info.value.host == "ghost"
    assert "Connection refused" in info.value.reason


# --- arguments are data, templates on request ----------------------------------------------------


def test_jinja_not_rendered_by_default(server: HostModules, workdir: str) -> None:
    server.run("ansible.builtin.copy", dest=f"{workdir}/t", content="{{ 1 + 1 }}")
    assert _stdout(server, f"cat {workdir}/t") == "{{ 1 + 1 }}"


def test_template_true_renders_with_host_vars(server: HostModules, workdir: str) -> None:
    server.run("ansible.builtin.copy", dest=f"{workdir}/t", content="{{ 1 + 1 }} {{ mh_word }}", template=True)
    assert _stdout(server, f"cat {workdir}/t") == "2 plain-word"


def test_template_true_decrypts_vault_variables(server: HostModules, workdir: str, vault_plain: str) -> None:
    server.run("ansible.builtin.copy", dest=f"{workdir}/v", content="{{ mh_vault_word }}", template=True)
    result = server.run("ansible.builtin.slurp", src=f"{workdir}/v")
    assert base64.b64decode(str(result.raw["content"])).decode() == vault_plain


def test_vault_variable_left_alone_without_template(server: HostModules, workdir: str) -> None:
    server.run("ansible.builtin.copy", dest=f"{workdir}/v", content="{{ mh_vault_word }}")
    assert _stdout(server, f"cat {workdir}/v") == "{{ mh_vault_word }}"


# --- secrets and process hygiene ----------------------------------------------------------------


def test_no_secret_in_logs_or_errors(
    server_user: HostModules, server: HostModules, lab_password: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server_user.run("ansible.builtin.command", cmd="id -un", become=True)
    server.run("ansible.builtin.command", cmd=f"echo {lab_password}")
    with pytest.raises(ModuleError) as info:
        server.run("ansible.builtin.command", cmd=f"sh -c 'echo {lab_password} >&2; exit 3'")
    with pytest.raises(ModuleError) as info_no_log:
        server.run("ansible.builtin.command", cmd="sh -c 'exit 4'", no_log=True)
    assert caplog.records
    for record in caplog.records:
        assert lab_password not in record.getMessage()
    for err in (info.value, info_no_log.value):
        assert lab_password not in str(err)
        assert lab_password not in repr(err.result)
    assert any("id -un" in record.getMessage() and "changed" in record.getMessage() for record in caplog.records)


def test_no_log__result_censored(server: HostModules) -> None:
    result = server.run("ansible.builtin.command", cmd="echo hidden-text", no_log=True)
    assert "hidden-text" not in repr(dict(result.raw))
    assert result.raw.get("censored")


def test_stdio_inheritable_and_sigint_handler_kept(server: HostModules, capfd: pytest.CaptureFixture[str]) -> None:
    before = [os.get_inheritable(fd) for fd in (0, 1, 2)]
    handler = signal.getsignal(signal.SIGINT)
    server.run("ansible.builtin.ping")
    server.run("ansible.builtin.copy", dest="/tmp/mhmod-hygiene", content="x")
    server.run("ansible.builtin.file", path="/tmp/mhmod-hygiene", state="absent")
    assert [os.get_inheritable(fd) for fd in (0, 1, 2)] == before
    assert signal.getsignal(signal.SIGINT) is handler
    subprocess.run(["sh", "-c", "echo out-after; echo err-after >&2"], check=True)
    captured = capfd.readouterr()
    assert "out-after" in captured.out
    assert "err-after" in captured.err


def test_ansible_output_stays_out_of_stdout(server: HostModules, capfd: pytest.CaptureFixture[str]) -> None:
    server.run("ansible.builtin.ping")
    with pytest.raises(ModuleError):
        server.run("ansible.builtin.command", cmd="false")
    captured = capfd.readouterr()
    assert captured.out == ""
    assert captured.err == ""


def test_project_collection_is_on_the_collection_path(server: HostModules, executor: StandardExecutor) -> None:
    server.run("ansible.builtin.ping")  # configures Ansible
    package = importlib.import_module("ansible_collections.mh_ansible.rollback")
    assert package is not None
