"""Which module calls run with ``_ansible_no_log`` on the target: those whose arguments hold a masked value."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_mh_ansible._private.ansible.executor import ModuleCallOptions, _hidden_on_target
from pytest_mh_ansible._private.secrets import secrets


@pytest.fixture(autouse=True)
def _known_secret() -> Iterator[None]:
    secrets.add("unit-known-secret-771")
    secrets.add("pin9")
    yield
    secrets.clear()


def _options(*, template: bool = False) -> ModuleCallOptions:
    return {"check": False, "diff": True, "become": None, "become_user": None, "no_log": False, "template": template}


@pytest.mark.parametrize(
    "args",
    [
        {"path": "/etc/app.conf", "line": "unit-known-secret-771"},  # a known secret as a whole
        {"path": "/etc/app.conf", "line": "token=unit-known-secret-771"},  # inside a string
        {"path": "/etc/app.conf", "line": "pin9"},  # a short secret as a whole argument
        {"name": "app", "api_token": "anything"},  # a secret-named argument
        {"path": "/etc/app.conf", "block": {"lines": ["a", "unit-known-secret-771"]}},  # at any depth
    ],
)
def test_hidden_on_target__arguments_with_a_masked_value(args: dict[str, Any]) -> None:
    assert _hidden_on_target(args, _options())


@pytest.mark.parametrize(
    "args",
    [
        {"path": "/etc/app.conf", "line": "debug = 1"},
        {"path": "/etc/app.conf", "line": "pin9 is not inside text"},  # a short secret inside text is not masked
        {"name": "app", "api_token": None},  # a secret name with no value
        {"path": "/etc/app.conf", "line": "{{ not templated }}"},  # Jinja-looking text, template off
    ],
)
def test_hidden_on_target__other_calls_still_log_their_arguments(args: dict[str, Any]) -> None:
    assert not _hidden_on_target(args, _options())


def test_hidden_on_target__templated_arguments_are_hidden() -> None:
    """A template's value is only known on the way to the host (a vault variable, say)."""
    assert _hidden_on_target({"line": ["x", "{{ db_password }}"]}, _options(template=True))
    assert _hidden_on_target({"line": "{% if a %}b{% endif %}"}, _options(template=True))
    assert not _hidden_on_target({"line": "plain"}, _options(template=True))
