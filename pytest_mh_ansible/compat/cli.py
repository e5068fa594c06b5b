"""``pytest_mh.cli``: ``CLIBuilder``, command lines built from a dict of options."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum, auto
from typing import Any, TypeAlias

from .conn import Powershell, Shell

__all__ = ["CLIBuilder", "CLIBuilderArgs"]


class CLIBuilder:
    """Build a command line from ``{name: (CLIBuilder.option.X, value)}``, as pytest-mh's ``host.cli`` does.

    ``PLAIN`` adds ``--name value``; ``VALUE`` the same with the value quoted in :meth:`command`;
    ``SWITCH`` adds ``--name`` when the value is true; ``POSITIONAL`` adds the value alone (quoted
    in :meth:`command`). A
    ``None`` entry or value is left out; a list repeats the option for each item. A name that
    starts with ``-`` is used as it is. Unlike pytest-mh, quoted values are escaped.

    Example::

        args = {"name": (host.cli.option.VALUE, "a b"), "force": (host.cli.option.SWITCH, True)}
        host.cli.command("useradd", args)   # "useradd --name 'a b' --force"
        host.conn.exec(host.cli.argv("useradd", args))
    """

    class option(Enum):
        PLAIN = auto()
        VALUE = auto()
        SWITCH = auto()
        POSITIONAL = auto()

    def __init__(self, shell: Shell) -> None:
        self.shell = shell
        self._prefix = "-" if isinstance(shell, Powershell) else "--"

    def command(self, command: str, args: CLIBuilderArgs) -> str:
        """The whole command line as one string, values quoted for the shell."""
        return " ".join(self._build(command, args, quote_value=True))

    def argv(self, command: str, args: CLIBuilderArgs) -> list[str]:
        """The whole command line as argv (for ``conn.exec``)."""
        return self._build(command, args, quote_value=False)

    def args(self, args: CLIBuilderArgs, *, quote_value: bool = False) -> list[str]:
        """Only the arguments, as a list."""
        return self._build(None, args, quote_value)

    def _build(self, command: str | None, args: CLIBuilderArgs, quote_value: bool) -> list[str]:
        argv = [command] if command is not None else []
        for name, entry in args.items():
            if entry is None:
                continue
            kind, value = entry
            if value is None:
                continue
            option = name if name.startswith("-") else self._prefix + name
            if kind is CLIBuilder.option.SWITCH:
                if isinstance(self.shell, Powershell):
                    argv.append(f"{option}:{'$True' if value else '$False'}")
                elif value:
                    argv.append(option)
                continue
            for item in value if isinstance(value, list | tuple) else [value]:
                text = str(item)
                if kind in (CLIBuilder.option.VALUE, CLIBuilder.option.POSITIONAL) and quote_value:
                    text = _quote(text)
                if kind is CLIBuilder.option.POSITIONAL:
                    argv.append(text)
                else:
                    argv.extend([option, text])
        return argv


def _quote(value: str) -> str:
    """Always single quotes, as pytest-mh writes them, with inner quotes escaped (which it does not)."""
    return "'" + value.replace("'", "'\"'\"'") + "'"


CLIBuilderArgs: TypeAlias = Mapping[str, tuple[CLIBuilder.option, Any] | None]
