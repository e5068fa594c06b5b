"""Which module executor a host uses: the names, the host variable, the rule (stdlib only: the plugin imports it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["EXECUTORS", "HOST_VARIABLE", "ExecutorName", "executor_for_host"]

ExecutorName = Literal["warm", "standard"]
EXECUTORS: tuple[ExecutorName, ...] = ("warm", "standard")
HOST_VARIABLE = "mh_executor"


def executor_for_host(variables: Mapping[str, Any], default: ExecutorName, *, host: str) -> ExecutorName:
    """The executor a host uses: its ``mh_executor`` variable (any case), else the session's ``default``.

    :raises ValueError: The variable holds something else than ``warm`` or ``standard``.
    """
    value = variables.get(HOST_VARIABLE)
    if value is None:
        return default
    text = str(value).strip().lower()
    if text == "warm":
        return "warm"
    if text == "standard":
        return "standard"
    raise ValueError(f"host {host}: {HOST_VARIABLE}={value!r} is not 'warm' or 'standard'")
