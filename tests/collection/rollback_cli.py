"""Helpers for the mh_ansible.rollback tests: the collection importable, its modules run through the ansible CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
COLLECTIONS = REPO / "collections"
COLLECTION = COLLECTIONS / "ansible_collections" / "mh_ansible" / "rollback"
CALLBACKS = Path(__file__).resolve().parent / "callback_plugins"
#: The targets' Python; the modules must run on it, not on the controller's.
TARGET_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))


@dataclass(frozen=True)
class TaskResult:
    """One task's outcome as the ``mh_results_json`` callback saw it; ``raw`` is the module's result dict.

    ``ignored`` is true for a failure the task's ``ignore_errors`` let pass.
    """

    task: str
    status: str
    ignored: bool
    raw: dict[str, Any]

    @property
    def changed(self) -> bool:
        return bool(self.raw.get("changed"))

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]


class LocalAnsible:
    """Run ansible / ansible-playbook against localhost with ``-c local`` and this repo's collections."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.env = {
            **os.environ,
            "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS),
            "ANSIBLE_CALLBACK_PLUGINS": str(CALLBACKS),
            "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
            "ANSIBLE_STDOUT_CALLBACK": "mh_results_json",
            "ANSIBLE_LOCALHOST_WARNING": "false",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
            "ANSIBLE_LOCAL_TEMP": str(workdir / "ansible-tmp"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_PIPELINING": "1",
        }

    def command(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run an Ansible CLI (from this interpreter's bin directory, not PATH) with the collection environment.

        A failure fails the test with the CLI's output.
        """
        argv = (str(Path(sys.executable).with_name(argv[0])), *argv[1:])
        proc = subprocess.run(argv, cwd=self.workdir, env=self.env, capture_output=True, text=True, check=False)
        if check and proc.returncode != 0:
            pytest.fail(f"{' '.join(argv)!r} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
        return proc

    def _results(self, proc: subprocess.CompletedProcess[str]) -> list[TaskResult]:
        try:
            data = json.loads(proc.stdout)
        except ValueError:
            pytest.fail(f"ansible output is not JSON (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return [TaskResult(item["task"], item["status"], item["ignored"], item["result"]) for item in data["results"]]

    def module(self, name: str, args: dict[str, Any], *, check: bool = False, diff: bool = False) -> TaskResult:
        """Run one module ad hoc and return its result (failures are returned, not raised)."""
        argv = ["ansible", "localhost", "-c", "local", "-e", f"ansible_python_interpreter={TARGET_PYTHON}"]
        argv += ["-m", name, "-a", json.dumps(args)]
        argv += ["--check"] * check + ["--diff"] * diff
        (result,) = self._results(self.command(*argv, check=False))
        return result

    def playbook(self, tasks: list[dict[str, Any]], extra_vars: dict[str, Any] | None = None) -> list[TaskResult]:
        """Run tasks in one play on localhost; results in task order (failed tasks should set ignore_errors)."""
        play = {
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "vars": {"ansible_python_interpreter": TARGET_PYTHON, **(extra_vars or {})},
            "tasks": tasks,
        }
        path = self.workdir / "playbook.yml"
        path.write_text(json.dumps([play], indent=1))
        return self._results(self.command("ansible-playbook", "-i", "localhost,", str(path), check=False))
