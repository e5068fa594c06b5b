"""pytest-mh's shells: how a script, its working directory and its environment become one command line."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

__all__ = ["Bash", "Powershell", "Shell"]


class Shell:
    """The shell that runs a host's scripts: its ``name`` and the ``shell_command`` that reads a script.

    :meth:`build_command_line` gives ``<shell_command> '<script>'``, the script preceded by the
    environment's exports and a ``cd``, then a blank line, as pytest-mh writes it. A shell with
    other syntax overrides :meth:`_export`, :meth:`_quote_value` and :meth:`_quote_script`.

    Example::

        Bash().build_command_line("echo $A", cwd="/tmp", env={"A": 1})
        # "/usr/bin/env bash -c 'export A=1\\ncd /tmp\\n\\necho $A'"
    """

    def __init__(self, name: str, shell_command: str) -> None:
        self.name = name
        self.shell_command = shell_command

    def build_command_line(self, script: str, *, cwd: str | None, env: Mapping[str, Any]) -> str:
        """The command line that runs ``script`` in ``cwd`` (None: unchanged) with ``env`` exported."""
        preamble = [self._export(name, self._quote_value(str(value))) for name, value in env.items()]
        if cwd is not None:
            preamble.append(f"cd {self._quote_value(cwd)}")
        body = "".join(f"{line}\n" for line in preamble) + ("\n" if preamble else "") + script
        return f"{self.shell_command} '{self._quote_script(body)}'"

    def _quote_value(self, value: str) -> str:
        """``value`` as one word inside the script."""
        return shlex.quote(value)

    def _quote_script(self, script: str) -> str:
        """``script`` made safe inside single quotes."""
        return script.replace("'", "'\"'\"'")

    def _export(self, name: str, quoted: str) -> str:
        """The statement that sets environment variable ``name`` for the rest of the script."""
        return f"export {name}={quoted}"


class Bash(Shell):
    """bash, the default shell of a pytest-mh host (``/usr/bin/env bash -c``)."""

    def __init__(self) -> None:
        super().__init__("bash", "/usr/bin/env bash -c")


class Powershell(Shell):
    """PowerShell (hosts with ``mh_os_family: windows``; ``powershell -NonInteractive -Command``)."""

    def __init__(self) -> None:
        super().__init__("powershell", "powershell -NonInteractive -Command")

    def _quote_script(self, script: str) -> str:
        return script.replace("'", "''").replace('"', '\\"')

    def _export(self, name: str, quoted: str) -> str:
        return f"$Env:{name} = {quoted}"
