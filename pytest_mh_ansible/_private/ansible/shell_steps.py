"""The action plugins' own shell steps that the warm agent does itself, with no shell.

Around a module, ``ActionBase`` runs a few fixed commands that the ``sh`` shell plugin builds:
``echo ~user`` (a home, for the remote tmp dir), the ``mkdtemp`` group that makes the task's tmp
dir, ``chmod u+rwx ...`` (its permissions fixed up), and ``rm -f -r ... > /dev/null 2>&1`` (the
tmp dir removed). Served as commands, each one costs the agent a fork, a ``/bin/sh``, and an
exec or two more (``mkdir``, ``chmod``, ``rm`` and the ``sleep 0`` that Ansible appends): 6 to 13 ms
on the lab hosts, four of them in every ``copy`` or ``template``.

:func:`step_request` reads such a command back into a request that the agent carries out with
system calls, with the same effect, output and exit status. It only accepts the exact text the
plugin builds, and only paths that the shell would leave as they are (no quote, ``$``, glob or
space: nothing to expand): any other command runs in a shell as before::

    >>> step_request("echo ~root")
    {'do': 'home', 'user': 'root'}
    >>> step_request("rm -f -r /root/.ansible/tmp/ansible-tmp-1-2-3/ > /dev/null 2>&1")
    {'do': 'remove', 'path': '/root/.ansible/tmp/ansible-tmp-1-2-3/', 'recurse': True}
    >>> step_request("echo $HOME") is None
    True
"""

from __future__ import annotations

import re
import shlex
from typing import Any

__all__ = ["step_request"]

# A path the sh plugin leaves unquoted in ``echo PATH`` and that the shell prints unchanged: absolute,
# no character that splits, expands, globs or escapes.
_PLAIN_PATH = r"/[A-Za-z0-9_./+,:@%=-]*"
_TMP_NAME = r"[A-Za-z0-9_.+-]+"

_HOME = re.compile(r"echo ~(?P<user>[_.A-Za-z0-9][-_.A-Za-z0-9]*)?")
_MKDTEMP = re.compile(
    r"\( umask (?P<umask>[0-7]{1,4}) && "
    rf'mkdir -p "` echo (?P<base>{_PLAIN_PATH}) `"&& '
    rf'mkdir "` echo (?P<dir>{_PLAIN_PATH}) `" && '
    rf'echo (?P<name>{_TMP_NAME})="` echo (?P<echoed>{_PLAIN_PATH}) `" \)'
)
_REMOVE = re.compile(r"rm -f (?P<recurse>-r )?(?P<path>.+?) > /dev/null 2>&1")
# The symbolic modes ActionBase._fixup_perms2 asks for (u+rwx, u+x, a+rx, ...): who, +/-, what.
_MODE = re.compile(r"(?P<who>[ugoa]+)(?P<op>[+-])(?P<perms>[rwx]+)")
_WHO = {"u": 0o700, "g": 0o070, "o": 0o007, "a": 0o777}
_PERMS = {"r": 0o444, "w": 0o222, "x": 0o111}


def step_request(cmd: str) -> dict[str, Any] | None:
    """The agent's request for ``cmd``, one of the sh plugin's own steps; None for any other command."""
    if match := _HOME.fullmatch(cmd):
        return {"do": "home", "user": match["user"] or ""}
    if match := _MKDTEMP.fullmatch(cmd):
        path = f"{match['base'].rstrip('/')}/{match['name']}" if match["base"] != "/" else f"/{match['name']}"
        if match["dir"] != path or match["echoed"] != path:
            return None
        return {"do": "mkdtemp", "umask": int(match["umask"], 8), "base": match["base"], "path": path}
    if match := _REMOVE.fullmatch(cmd):
        word = _one_word(match["path"])
        if word is None or not word.startswith("/"):
            return None
        return {"do": "remove", "path": word, "recurse": bool(match["recurse"])}
    if cmd.startswith("chmod "):
        return _chmod(cmd)
    return None


def _chmod(cmd: str) -> dict[str, Any] | None:
    """``chmod MODE PATH...`` as ``shlex.join`` builds it, with a mode of the kind _fixup_perms2 uses."""
    words = _quoted_words(cmd)
    if words is None or len(words) < 3:
        return None
    mode = _MODE.fullmatch(words[1])
    paths = words[2:]
    if mode is None or not all(path.startswith("/") for path in paths):
        return None
    who = 0
    for letter in mode["who"]:
        who |= _WHO[letter]
    perms = 0
    for letter in mode["perms"]:
        perms |= _PERMS[letter]
    bits = who & perms
    add, drop = (bits, 0) if mode["op"] == "+" else (0, bits)
    return {"do": "chmod", "add": add, "drop": drop, "paths": paths}


def _one_word(text: str) -> str | None:
    """The word ``shlex.quote`` made ``text`` from, or None if ``text`` is not one such word."""
    words = _quoted_words(text)
    return words[0] if words is not None and len(words) == 1 else None


def _quoted_words(text: str) -> list[str] | None:
    """The words ``shlex.join`` made ``text`` of; None for anything but plain or single-quoted words (a shell's job)."""
    try:
        words = shlex.split(text)
    except ValueError:
        return None
    return words if shlex.join(words) == text else None
