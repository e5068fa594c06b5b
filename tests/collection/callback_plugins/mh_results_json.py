"""Ansible stdout callback for the collection tests: print every task result, diff included, as one JSON document."""

from __future__ import annotations

import json
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: mh_results_json
type: stdout
short_description: Print all task results, unabridged, as one JSON document at the end of the run
description:
  - Test helper for tests/collection; unlike the json callback it keeps C(diff) and needs no other collection.
"""


class CallbackModule(CallbackBase):  # type: ignore[misc]
    """Collect ``{"host", "task", "status", "ignored", "result"}`` per result and dump them when the run ends."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "mh_results_json"

    def __init__(self) -> None:
        super().__init__()
        self.results: list[dict[str, Any]] = []

    def _add(self, result: Any, status: str, ignored: bool = False) -> None:
        self.results.append(
            {
                "host": result._host.get_name(),
                "task": result._task.get_name(),
                "status": status,
                "ignored": ignored,
                "result": result._result,
            }
        )

    def v2_runner_on_ok(self, result: Any) -> None:
        self._add(result, "ok")

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._add(result, "failed", ignore_errors)

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._add(result, "skipped")

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._add(result, "unreachable")

    def v2_playbook_on_stats(self, stats: Any) -> None:
        self._display.display(json.dumps({"results": self.results}, default=str, sort_keys=True))
