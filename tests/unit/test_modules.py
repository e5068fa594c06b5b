"""Unit tests of ``pytest_mh_ansible.modules``: results, masking, arguments, recorder calls (no Ansible)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any

import pytest

from pytest_mh_ansible._private.secrets import MASK, mask_args, secrets
from pytest_mh_ansible.errors import HostUnreachableError, ModuleError
from pytest_mh_ansible.host import MultihostHost
from pytest_mh_ansible.modules import HostModules, ModuleResult

SECRET = "Zq-unit-s3cret-77"


@pytest.fixture(autouse=True)
def _known_secret() -> Iterator[None]:
    secrets.add(SECRET)
    yield
    secrets.clear()


@dataclass
class FakeExecutor:
    """Returns queued results (or raises) and records every call."""

    results: list[dict[str, Any] | BaseException] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    log: list[str] | None = None
    carry: bool = False  # carry a command before the module, as the warm executor does

    def run(
        self,
        host: str,
        module: str,
        args: Mapping[str, Any],
        *,
        check: bool,
        diff: bool,
        become: bool | None,
        become_user: str | None,
        no_log: bool,
        template: bool,
        task_vars: Mapping[str, Any] | None = None,
        before: Any = None,
    ) -> dict[str, Any]:
        if before is not None and self.carry:
            try:
                before.carried(0, "probed\n")
            except Exception as err:  # as the action plugin: the task fails, the module does not run
                return {"failed": True, "msg": str(err)}
        self.calls.append(
            dict(
                host=host,
                module=module,
                args=dict(args),
                check=check,
                diff=diff,
                become=become,
                become_user=become_user,
                no_log=no_log,
                template=template,
                task_vars=task_vars,
            )
        )
        if self.log is not None:
            self.log.append(f"run {module}")
        result = self.results.pop(0) if self.results else {"changed": False}
        if isinstance(result, BaseException):
            raise result
        return result

    def close(self) -> None:
        pass


@dataclass
class FakeRecorder:
    log: list[str]
    prepared: list[tuple[str, str, dict[str, Any], Sequence[str] | None]] = field(default_factory=list)

    def prepare(
        self, host: MultihostHost, module: str, args: Mapping[str, Any], *, revert_paths: Sequence[str] | None
    ) -> object:
        self.prepared.append((host.name, module, dict(args), revert_paths))
        self.log.append(f"prepare {module}")
        return f"token-{len(self.prepared)}"

    def commit(self, token: object, result: ModuleResult) -> None:
        self.log.append(f"commit {token} changed={result.changed}")

    def abort(self, token: object) -> None:
        self.log.append(f"abort {token}")

    def called(
        self, host: MultihostHost, module: str, args: Mapping[str, Any], *, become: bool | None, become_user: str | None
    ) -> None:
        self.log.append(f"called {module}")


def _host() -> MultihostHost:
    return MultihostHost("server1", roles=("server",), domain="default", variables={"ansible_host": "10.0.0.1"})


def _modules(*results: dict[str, Any] | BaseException, recorder: FakeRecorder | None = None) -> HostModules:
    log = recorder.log if recorder is not None else None
    return HostModules(_host(), FakeExecutor(list(results), log=log), recorder=recorder)


def _executor(modules: HostModules) -> FakeExecutor:
    executor = modules._executor
    assert isinstance(executor, FakeExecutor)
    return executor


# --- ModuleResult.from_raw ----------------------------------------------------------------------


def test_module_result__from_raw_normalises_flags_and_missing_fields() -> None:
    result = ModuleResult.from_raw("server1", "ansible.builtin.ping", {"ping": "pong"})
    assert (result.changed, result.failed, result.skipped, result.msg, result.rc, result.diff) == (
        False,
        False,
        False,
        "",
        None,
        [],
    )
    assert result.raw["ping"] == "pong"
    assert (result.host, result.module) == ("server1", "ansible.builtin.ping")


def test_module_result__diff_dict_becomes_a_list_of_one() -> None:
    diff = {"before": "a\n", "after": "b\n"}
    assert ModuleResult.from_raw("h", "m", {"changed": True, "diff": diff}).diff == [diff]


def test_module_result__diff_list_keeps_dicts_only_and_drops_empty_ones() -> None:
    raw = {"diff": [{"before": "x"}, {}, "junk", {"after": "y"}]}
    assert ModuleResult.from_raw("h", "m", raw).diff == [{"before": "x"}, {"after": "y"}]


@pytest.mark.parametrize("diff", [None, {}, [], "text"])
def test_module_result__no_diff_is_an_empty_list(diff: Any) -> None:
    assert ModuleResult.from_raw("h", "m", {"diff": diff}).diff == []


@pytest.mark.parametrize(("rc", "expected"), [(0, 0), (2, 2), ("3", 3), (None, None), ("x", None), (True, None)])
def test_module_result__rc_is_an_int_or_none(rc: Any, expected: int | None) -> None:
    assert ModuleResult.from_raw("h", "m", {"rc": rc}).rc == expected


def test_module_result__flags_are_bools() -> None:
    result = ModuleResult.from_raw("h", "m", {"changed": 1, "failed": "yes", "skipped": 0})
    assert (result.changed, result.failed, result.skipped) == (True, True, False)


def test_module_result__secrets_are_masked_in_raw_and_msg() -> None:
    raw = {"msg": f"bad {SECRET}", "stdout": f"pw={SECRET}", "api_token": "abc123", "nested": [{"x": SECRET}]}
    result = ModuleResult.from_raw("h", "m", raw)
    assert SECRET not in repr(dict(result.raw))
    assert result.msg == f"bad {MASK}"
    assert result.raw["api_token"] == MASK
    assert result.raw["nested"] == [{"x": MASK}]


def test_module_result__is_frozen_and_raw_read_only() -> None:
    result = ModuleResult.from_raw("h", "m", {"changed": True})
    with pytest.raises(FrozenInstanceError):
        result.changed = False  # type: ignore[misc]
    with pytest.raises(TypeError):
        result.raw["changed"] = False  # type: ignore[index]


# --- arguments ----------------------------------------------------------------------------------


def test_run__args_and_kwargs_are_merged() -> None:
    modules = _modules()
    modules.run("ansible.builtin.copy", {"check": "literal", "dest": "/a"}, content="x")
    assert _executor(modules).calls[0]["args"] == {"check": "literal", "dest": "/a", "content": "x"}


def test_run__an_argument_given_twice_is_a_type_error() -> None:
    modules = _modules()
    with pytest.raises(TypeError, match="dest"):
        modules.run("ansible.builtin.copy", {"dest": "/a"}, dest="/b")
    assert _executor(modules).calls == []


def test_run__call_options_reach_the_executor() -> None:
    modules = _modules()
    modules.run("m", check=True, diff=False, become=True, become_user="app", no_log=True, template=True)
    call = _executor(modules).calls[0]
    assert (call["host"], call["check"], call["diff"], call["become"], call["become_user"]) == (
        "server1",
        True,
        False,
        True,
        "app",
    )
    assert (call["no_log"], call["template"]) == (True, True)


def test_run__returns_a_module_result() -> None:
    modules = _modules({"changed": True, "rc": 0, "stdout": "ok"})
    result = modules.run("ansible.builtin.command", cmd="true")
    assert (result.changed, result.rc, result.raw["stdout"]) == (True, 0, "ok")


# --- errors -------------------------------------------------------------------------------------


def test_run__failure_raises_module_error_naming_host_module_and_message() -> None:
    modules = _modules({"failed": True, "msg": "Destination directory /nope does not exist"})
    with pytest.raises(ModuleError) as info:
        modules.run("ansible.builtin.copy", dest="/nope/x", content="y")
    err = info.value
    assert (err.host, err.module) == ("server1", "ansible.builtin.copy")
    assert str(err).startswith(
        "server1: module ansible.builtin.copy failed: Destination directory /nope does not exist"
    )
    assert "'dest': '/nope/x'" in str(err)
    assert err.result["msg"] == "Destination directory /nope does not exist"


def test_run__failure_text_masks_secret_named_args_and_known_secrets() -> None:
    modules = _modules({"failed": True, "msg": f"login with {SECRET} refused", "stderr": f"{SECRET}!"})
    with pytest.raises(ModuleError) as info:
        modules.run("ansible.builtin.uri", url="http://x", password="other-pw-123", body=f"k={SECRET}")
    text = str(info.value)
    assert SECRET not in text
    assert "other-pw-123" not in text
    assert f"'password': '{MASK}'" in text
    assert SECRET not in repr(info.value.result)


def test_run__failure_text_with_no_log_hides_every_argument() -> None:
    modules = _modules({"failed": True, "msg": "no"})
    with pytest.raises(ModuleError) as info:
        modules.run("ansible.builtin.command", cmd="echo plain-value", no_log=True)
    assert "plain-value" not in str(info.value)
    assert f"'cmd': '{MASK}'" in str(info.value)


def test_run__failure_text_names_rc_and_stderr() -> None:
    modules = _modules({"failed": True, "msg": "non-zero return code", "rc": 2, "stderr": "ls: no such file"})
    with pytest.raises(ModuleError, match=r"non-zero return code; rc=2; stderr: ls: no such file"):
        modules.run("ansible.builtin.command", cmd="ls /nope")


def test_run__skipped_result_is_returned_not_raised() -> None:
    modules = _modules({"skipped": True, "msg": "remote module does not support check mode"})
    assert modules.run("x.y.z", check=True).skipped


def test_mask_args__masks_secret_names_and_known_secrets() -> None:
    masked = mask_args({"name": "alice", "password": "p", "comment": f"has {SECRET}"})
    assert masked == {"name": "alice", "password": MASK, "comment": f"has {MASK}"}


# --- recorder -----------------------------------------------------------------------------------


def test_recorder__prepare_run_commit_in_order() -> None:
    recorder = FakeRecorder(log=[])
    modules = _modules({"changed": True}, recorder=recorder)
    modules.run("ansible.builtin.copy", dest="/etc/a", content="x", revert_paths=["/etc/a"])
    assert recorder.log == [
        "prepare ansible.builtin.copy",
        "run ansible.builtin.copy",
        "commit token-1 changed=True",
        "called ansible.builtin.copy",
    ]
    assert recorder.prepared == [("server1", "ansible.builtin.copy", {"dest": "/etc/a", "content": "x"}, ["/etc/a"])]


def test_recorder__failed_module__committed_as_a_possible_change() -> None:
    """A module may fail half-way (a user made, then its key type refused): its inverse is recorded."""
    recorder = FakeRecorder(log=[])
    modules = _modules({"failed": True, "msg": "boom"}, recorder=recorder)
    with pytest.raises(ModuleError):
        modules.run("ansible.builtin.copy", dest="/etc/a", content="x")
    assert recorder.log == ["prepare ansible.builtin.copy", "run ansible.builtin.copy", "commit token-1 changed=True"]


def test_recorder__executor_exception_aborts() -> None:
    recorder = FakeRecorder(log=[])
    modules = _modules(HostUnreachableError("server1", "no route"), recorder=recorder)
    with pytest.raises(HostUnreachableError):
        modules.run("ansible.builtin.file", path="/a", state="absent")
    assert recorder.log == ["prepare ansible.builtin.file", "run ansible.builtin.file", "abort token-1"]


def test_recorder__check_mode_is_not_recorded() -> None:
    recorder = FakeRecorder(log=[])
    modules = _modules({"changed": True}, recorder=recorder)
    assert modules.run("ansible.builtin.user", name="bob", check=True).changed
    assert recorder.log == ["run ansible.builtin.user"]


@dataclass
class FakeBefore:
    """A command to run before the module (``BeforeCommand``), logging how it went."""

    log: list[str]
    refuse: bool = False  # its outcome stops the module (an entry that cannot be written)
    command: str = "probe"
    done: bool = False
    error: BaseException | None = None

    def _step(self, what: str) -> None:
        assert not self.done
        self.done = True
        self.log.append(what)
        if self.refuse:
            self.error = OSError("could not write the rollback journal")
            raise self.error

    def run_apart(self) -> None:
        self._step("before apart")

    def carried(self, rc: int, stdout: str) -> None:
        self._step(f"before carried rc={rc} {stdout.strip()}")

    def lost(self, why: str) -> None:
        self._step(f"before lost: {why}")


@dataclass
class DeferringRecorder(FakeRecorder):
    """A recorder that leaves its probe to the caller (``prepare_deferred``)."""

    refuse: bool = False

    def prepare_deferred(
        self, host: MultihostHost, module: str, args: Mapping[str, Any], *, revert_paths: Sequence[str] | None
    ) -> tuple[object, FakeBefore]:
        return self.prepare(host, module, args, revert_paths=revert_paths), FakeBefore(self.log, refuse=self.refuse)


def test_recorder__a_command_before_the_module__carried_by_the_executor() -> None:
    recorder = DeferringRecorder(log=[])
    modules = HostModules(_host(), FakeExecutor([{"changed": True}], log=recorder.log, carry=True), recorder=recorder)
    modules.run("ansible.builtin.user", name="alice")
    assert recorder.log == [
        "prepare ansible.builtin.user",
        "before carried rc=0 probed",
        "run ansible.builtin.user",
        "commit token-1 changed=True",
        "called ansible.builtin.user",
    ]


def test_recorder__a_command_before_the_module_that_no_module_reached__run_apart_after_the_call() -> None:
    """An executor that got to no module (an unknown one, an action that failed first) ran nothing:
    the command runs apart, so that the recorder knows the state it needs before it commits."""
    recorder = DeferringRecorder(log=[])
    executor = FakeExecutor([{"failed": True, "msg": "no such module"}], log=recorder.log)
    modules = HostModules(_host(), executor, recorder=recorder)
    with pytest.raises(ModuleError):
        modules.run("ansible.builtin.user", name="alice")
    assert recorder.log == [
        "prepare ansible.builtin.user",
        "run ansible.builtin.user",
        "before apart",
        "commit token-1 changed=True",
    ]


def test_recorder__a_command_before_the_module_that_fails__its_error_raised_and_the_call_aborted() -> None:
    """The recorder could not save the state to restore: the caller gets its error, the module did not run."""
    recorder = DeferringRecorder(log=[], refuse=True)
    modules = HostModules(_host(), FakeExecutor([{"changed": True}], log=recorder.log, carry=True), recorder=recorder)
    with pytest.raises(OSError, match="could not write the rollback journal"):
        modules.run("ansible.builtin.user", name="alice")
    assert recorder.log == ["prepare ansible.builtin.user", "before carried rc=0 probed", "abort token-1"]


def test_recorder__is_optional() -> None:
    assert _modules({"changed": True}).run("ansible.builtin.file", path="/a", state="touch").changed


# --- facts --------------------------------------------------------------------------------------


def test_facts__gathered_once_and_cached() -> None:
    modules = _modules({"ansible_facts": {"ansible_service_mgr": "sysvinit"}})
    assert modules.facts()["ansible_service_mgr"] == "sysvinit"
    assert modules.facts()["ansible_service_mgr"] == "sysvinit"
    assert [call["module"] for call in _executor(modules).calls] == ["ansible.builtin.setup"]


def test_facts__refresh_gathers_again() -> None:
    modules = _modules({"ansible_facts": {"a": 1}}, {"ansible_facts": {"a": 2}})
    modules.facts()
    assert modules.facts(refresh=True)["a"] == 2


@pytest.mark.parametrize("module", ["ansible.builtin.service", "ansible.builtin.package", "package"])
def test_service_package__facts_gathered_first_then_passed_to_every_call(module: str) -> None:
    modules = _modules({"ansible_facts": {"ansible_service_mgr": "sysvinit"}}, {"changed": True}, {"changed": True})
    modules.run(module, name="app", state="restarted")
    modules.run(module, name="app", state="restarted")
    calls = _executor(modules).calls
    assert [call["module"] for call in calls] == ["ansible.builtin.setup", module, module]
    assert calls[1]["task_vars"] == {"ansible_facts": {"ansible_service_mgr": "sysvinit"}}
    assert calls[2]["task_vars"] == calls[1]["task_vars"]
