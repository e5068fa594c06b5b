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
