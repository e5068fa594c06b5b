"""Unit tests of ``pytest_mh_ansible._private.rollback.drift``: what is fingerprinted and how differences read."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_mh_ansible._private.rollback.drift import ACCOUNT_FILES, differences, fingerprint
from pytest_mh_ansible.modules import ModuleResult


class _FakeModules:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def run(self, module: str, **args: Any) -> ModuleResult:
        self.calls.append(args)
        state = {"paths": {path: {"type": "file", "sha256": "x"} for path in args["paths"]}}
        return ModuleResult.from_raw("h1", module, {"changed": False, "state": state})


@pytest.mark.parametrize(
    ("paths", "added"),
    [
        (["/home"], list(ACCOUNT_FILES)),
        (["/etc"], []),
        (["/etc/"], []),
        (["/etc/passwd", "/home"], [f for f in ACCOUNT_FILES if f != "/etc/passwd"]),
        (["/"], []),
    ],
)
def test_fingerprint__always_covers_the_account_files(paths: list[str], added: list[str]) -> None:
    modules = _FakeModules()
    host: Any = SimpleNamespace(ansible=modules)
    fingerprint(host, paths, [])
    assert modules.calls[0]["paths"] == [*paths, *added]


def test_fingerprint__account_files_are_not_masked_as_secret_names() -> None:
    host: Any = SimpleNamespace(ansible=_FakeModules())
    state = fingerprint(host, ["/home"], [])
    assert state["paths"]["/etc/passwd"] == {"type": "file", "sha256": "x"}


def test_differences__passwd_content_change_is_drift() -> None:
    before = {"paths": {"/etc/passwd": {"type": "file", "sha256": "a", "size": 10}}}
    after = {"paths": {"/etc/passwd": {"type": "file", "sha256": "b", "size": 42}}, "users": {"mhdrift": {"uid": 1}}}
    assert differences(before, after) == ["/etc/passwd: content changed", "user mhdrift: created"]


class _UnitFileModules(_FakeModules):
    """host_state as it answers on a systemd host: unit-file states with their signature."""

    def __init__(self, signatures: list[str | None]) -> None:
        super().__init__()
        self.signatures = signatures

    def run(self, module: str, **args: Any) -> ModuleResult:
        self.calls.append(args)
        signature = self.signatures.pop(0)
        raw: dict[str, Any] = {"changed": False, "state": {"services": {"ssh.service": {"enabled": "enabled"}}}}
        if signature is not None:
            known = args.get("unit_files") or {}
            raw["unit_files"] = {"signature": signature, "enabled": {"ssh.service": "enabled"}}
            raw["unit_files_reused"] = known.get("signature") == signature
        return ModuleResult.from_raw("h1", module, raw)


def test_fingerprint__gives_the_unit_file_states_back_to_the_next_fingerprint(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG", logger="pytest_mh_ansible.rollback")
    modules = _UnitFileModules(["s1", "s1", None, "s2", "s2"])
    host: Any = SimpleNamespace(ansible=modules, name="h1")
    cache: dict[str, Any] = {}
    fingerprint(host, ["/etc"], [], cache)
    assert "unit_files" not in modules.calls[0]
    assert cache["unit_files"]["signature"] == "s1"
    fingerprint(host, ["/etc"], [], cache)
    assert modules.calls[1]["unit_files"] == {"signature": "s1", "enabled": {"ssh.service": "enabled"}}
    assert "h1: fingerprint: unit-file states reused" in caplog.text
    fingerprint(host, ["/etc"], [], cache)  # no signature this time (a unit directory just changed)
    assert "unit_files" not in cache
    fingerprint(host, ["/etc"], [], cache)
    assert "unit_files" not in modules.calls[3]
    fingerprint(host, ["/etc"], [])  # without a cache: nothing given back
    assert "unit_files" not in modules.calls[4]
