"""The transport tests' host: a lab that cannot start is an error in CI, never a silent loopback sshd."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

if os.geteuid() != 0:  # the lab is only tried as root
    pytest.skip("the choice of the lab needs root", allow_module_level=True)


@pytest.fixture
def choice(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """This directory's conftest, loaded apart, with a lab that fails and a loopback sshd that is a name."""
    spec = importlib.util.spec_from_file_location("transport_conftest_copy", Path(__file__).with_name("conftest.py"))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)

    @contextlib.contextmanager
    def broken_lab() -> Iterator[object]:
        raise RuntimeError("no network namespaces here")
        yield  # pragma: no cover

    @contextlib.contextmanager
    def loopback() -> Iterator[str]:
        yield "loopback"

    monkeypatch.setattr(module, "lab_host", broken_lab)
    monkeypatch.setattr(module, "loopback_sshd", loopback)
    for name in ("MH_TEST_NO_SKIP", "MH_TRANSPORT_TARGET"):
        monkeypatch.delenv(name, raising=False)
    return module


def test_target__a_failing_lab_is_an_error_under_no_skip(choice: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MH_TEST_NO_SKIP", "1")
    with contextlib.ExitStack() as stack, pytest.raises(pytest.fail.Exception) as info:
        choice.choose_target(stack)
    assert "MH_TEST_NO_SKIP=1" in str(info.value)
    assert "no network namespaces here" in str(info.value)


def test_target__a_failing_lab_is_an_error_when_the_lab_is_asked_for(
    choice: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MH_TRANSPORT_TARGET", "lab")
    with contextlib.ExitStack() as stack, pytest.raises(pytest.fail.Exception, match="MH_TRANSPORT_TARGET=lab"):
        choice.choose_target(stack)


def test_target__elsewhere_the_loopback_sshd_stands_in(choice: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    with contextlib.ExitStack() as stack:
        assert choice.choose_target(stack) == "loopback"
    monkeypatch.setenv("MH_TEST_NO_SKIP", "1")
    monkeypatch.setenv("MH_TRANSPORT_TARGET", "loopback")  # asked for by name: not a substitute
    with contextlib.ExitStack() as stack:
        assert choice.choose_target(stack) == "loopback"
