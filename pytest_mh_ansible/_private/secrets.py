"""Secret values known to the session, and masking them out of every text we show."""

from __future__ import annotations

import fnmatch
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "DEFAULT_SECRET_VARS",
    "MASK",
    "MIN_SUBSTRING_LEN",
    "SecretStore",
    "is_secret_name",
    "logged_args",
    "mask_args",
    "secrets",
]

MASK = "********"

# Variable and argument names whose values are secrets (Ansible's own convention and common names).
# Globs, matched case-insensitively against the whole name; the ini list mh_secret_vars adds more.
DEFAULT_SECRET_VARS = (
    "*password*",
    "*passphrase*",
    "*passwd*",
    "*secret*",
    "*token*",
    "*key*",
    "*credential*",
    "*_pass",
    "pass",
)

# Names that match a pattern but say where a secret is, or are its public half: their values are
# paths and public data (ansible_ssh_private_key_file, ssh_public_key), never masked for their name.
# mh_multihost_keys and mh_domain_keys hold the other keys of a pytest-mh host file (its topology names,
# "provisioned_topologies: [shadow]"): data, whose secret-named keys inside are still found by their names.
_NOT_SECRET_NAMES = ("*_file", "*_path", "*_dir", "*public*", "*_checking", "mh_*_keys")

# Variable and argument names are identifiers (``api_key``, ``X-Api-Key``). A key with "/", "." or a
# space is data: a path such as /etc/passwd or /etc/ssh/ssh_host_rsa_key in a fingerprint is not a secret.
_NAME_SHAPE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_NAME_ANSWERS_KEPT = 4096  # names whose answer is kept (a path as a key would grow the dict without bound)

# A value shorter than this is masked only where it stands whole (an argument or a variable), never
# inside other text: "root" as a password must not turn "uid=0(root)" into "uid=0(********)".
MIN_SUBSTRING_LEN = 6


def _compile(patterns: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{fnmatch.translate(p.lower())})" for p in patterns) or r"(?!)")


class SecretStore:
    """Secret strings of this process, masked out of logs, reports and error messages.

    Secrets are process-wide (Ansible's vault secrets are too), so one store serves the
    whole session. A value of :data:`MIN_SUBSTRING_LEN` characters or more is masked
    wherever it occurs; a shorter one only where it stands as a whole value (a module
    argument, a variable, a string in a result or in a failed assertion).

    Example::

        secrets.add("s3cr3t-pw")
        secrets.mask("sshpass -p s3cr3t-pw")  # 'sshpass -p ********'
        secrets.add("root")
        secrets.mask("uid=0(root)")  # unchanged: a short value is not masked inside text
        secrets.mask_data({"db": "root"}, values=True)  # {'db': '********'}
    """

    def __init__(self) -> None:
        self._values: dict[str, int] = {}  # value -> its number (order of registration, from 1)
        self._pattern: re.Pattern[str] | None = None
        self._names = _compile(DEFAULT_SECRET_VARS)
        self._not_names = _compile(_NOT_SECRET_NAMES)
        self._lock = threading.Lock()
        # name -> is_secret_name(name): a result's keys repeat (a fingerprint has 5,000 records of the same keys)
        self._name_answers: dict[str, bool] = {}

    # -- which names hold secrets --------------------------------------------------------------
    def set_name_patterns(self, extra: Sequence[str]) -> None:
        """Add glob patterns (the ini list ``mh_secret_vars``) to :data:`DEFAULT_SECRET_VARS`."""
        self._names = _compile([*DEFAULT_SECRET_VARS, *(p.strip() for p in extra if p.strip())])
        self._name_answers = {}

    def is_secret_name(self, name: str) -> bool:
        """True for names of variables or arguments that hold secrets (``ansible_password``, ``api_key``)."""
        answer = self._name_answers.get(name)
        if answer is None:
            lowered = name.lower()
            answer = bool(_NAME_SHAPE.fullmatch(name)) and bool(self._names.match(lowered))
            answer = answer and not self._not_names.match(lowered)
            if len(self._name_answers) < _NAME_ANSWERS_KEPT:
                self._name_answers[name] = answer
        return answer

    # -- which values are secrets --------------------------------------------------------------
    def add(self, value: object) -> None:
        """Remember a secret value (strings; numbers are turned into strings)."""
        if value is None or isinstance(value, bool):
            return
        text = str(value)
        if not text.strip():
            return
        with self._lock:
            if text not in self._values:
                self._values[text] = len(self._values) + 1
                if len(text) >= MIN_SUBSTRING_LEN:
                    self._pattern = None

    def add_from_vars(self, variables: Mapping[str, Any]) -> None:
        """Remember the values of every variable whose name says it is a secret, at any depth.

        A secret-named variable that holds a list or a dict makes all its leaves secrets
        (``db_credentials: {user: app, pw: ...}``).
        """
        for name, value in variables.items():
            if isinstance(name, str) and self.is_secret_name(name):
                self._add_leaves(value)
            elif isinstance(value, Mapping):
                self.add_from_vars(value)
            elif isinstance(value, list | tuple):
                for item in value:
                    if isinstance(item, Mapping):
                        self.add_from_vars(item)

    def _add_leaves(self, value: Any) -> None:
        if isinstance(value, Mapping):
            for item in value.values():
                self._add_leaves(item)
        elif isinstance(value, list | tuple | set | frozenset):
            for item in value:
                self._add_leaves(item)
        elif isinstance(value, str | int | float):
            self.add(value)

    def add_all(self, values: Iterable[object]) -> None:
        for value in values:
            self.add(value)

    def is_secret(self, value: object) -> bool:
        """True when ``value`` as a whole is a known secret."""
        return isinstance(value, str | int | float) and not isinstance(value, bool) and str(value) in self._values

    # -- masking -------------------------------------------------------------------------------
    def _long_pattern(self) -> re.Pattern[str] | None:
        pattern = self._pattern
        if pattern is None:
            with self._lock:
                ordered = sorted((v for v in self._values if len(v) >= MIN_SUBSTRING_LEN), key=len, reverse=True)
                if not ordered:
                    return None
                pattern = self._pattern = re.compile("|".join(re.escape(v) for v in ordered))
        return pattern

    def mask(self, text: str) -> str:
        """Return ``text`` with every known secret of :data:`MIN_SUBSTRING_LEN`+ characters replaced by ``********``."""
        if not self._values or not text:
            return text
        pattern = self._long_pattern()
        return pattern.sub(MASK, text) if pattern is not None else text

    def substitute(self, text: str, replacement: Callable[[str], str]) -> str:
        """Return ``text`` with every secret that :meth:`mask` masks replaced by ``replacement(secret)``.

        Example::

            secrets.substitute("sshpass -p s3cr3t!", lambda s: "{{ password }}")  # 'sshpass -p {{ password }}'
        """
        if not self._values or not text:
            return text
        pattern = self._long_pattern()
        return pattern.sub(lambda match: replacement(match.group(0)), text) if pattern is not None else text

    def mask_data(self, data: Any, *, values: bool = False) -> Any:
        """Mask secrets in nested data (dicts, lists, strings); secret-named keys are masked whole.

        :param values: The leaves are values the user gave (module arguments, extra vars): a leaf
            that is a secret as a whole is masked even when it is shorter than :data:`MIN_SUBSTRING_LEN`.
            Results and output are not: there, ``root`` is more likely a user name than the password.
        """
        if values and self.is_secret(data):
            return MASK
        if isinstance(data, str):
            return self.mask(data)
        if isinstance(data, Mapping):
            return {
                k: (
                    MASK
                    if isinstance(k, str) and self.is_secret_name(k) and v not in (None, "")
                    else self.mask_data(v, values=values)
                )
                for k, v in data.items()
            }
        if isinstance(data, list | tuple):
            return type(data)(self.mask_data(v, values=values) for v in data)
        return data

    def describe(self, value: Any) -> str | None:
        """``repr(value)`` with each secret shown as ``<secret #N>``, or None when it holds no secret.

        The number is the secret's own (the order it became known), so two different secrets
        read as different and one secret reads the same everywhere, without showing either.
        """
        if not self._values:
            return None
        found = False

        def render(item: Any) -> str:
            nonlocal found
            if self.is_secret(item):
                found = True
                return f"<secret #{self._values[str(item)]}>"
            if isinstance(item, str):
                pattern = self._long_pattern()
                if pattern is None or not pattern.search(item):
                    return repr(item)
                found = True
                parts: list[str] = []
                last = 0
                for match in pattern.finditer(item):
                    parts.append(repr(item[last : match.start()]))
                    parts.append(f"<secret #{self._values[match.group(0)]}>")
                    last = match.end()
                parts.append(repr(item[last:]))
                return " + ".join(p for p in parts if p not in ("''", '""'))
            if isinstance(item, Mapping):
                return "{" + ", ".join(f"{render(k)}: {render(v)}" for k, v in item.items()) + "}"
            if isinstance(item, list):
                return "[" + ", ".join(render(v) for v in item) + "]"
            if isinstance(item, tuple):
                inner = ", ".join(render(v) for v in item)
                return f"({inner},)" if len(item) == 1 else f"({inner})"
            return self.mask(repr(item))

        text = render(value)
        return text if found else None

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._pattern = None


secrets = SecretStore()
"""The store of this process."""


def is_secret_name(name: str) -> bool:
    """True for variable or argument names that hold secrets (``ansible_password``, ``api_token``, ``api_key``)."""
    return secrets.is_secret_name(name)


def mask_args(args: Mapping[str, Any], *, no_log: bool = False) -> dict[str, Any]:
    """Module arguments fit for logs and messages: every value hidden with ``no_log``, else secrets masked."""
    if no_log:
        return {str(key): MASK for key in args}
    masked = secrets.mask_data(dict(args), values=True)
    return dict(masked) if isinstance(masked, Mapping) else {}


LOGGED_VALUE_MAX = 1000
"""Characters of an argument's ``repr`` that a log line of a call shows in full; a longer one is summarised."""


def logged_args(args: Mapping[str, Any], *, no_log: bool = False) -> dict[str, Any]:
    """:func:`mask_args` for the one log line of each call: a value longer than :data:`LOGGED_VALUE_MAX` is
    named by its type and size, not shown (a file's content, the unit-file states a fingerprint gives back).

    Error messages keep every argument (:func:`mask_args`).
    """
    shown: dict[str, Any] = {}
    for key, value in mask_args(args, no_log=no_log).items():
        text = repr(value)
        if len(text) <= LOGGED_VALUE_MAX:
            shown[key] = value
        elif isinstance(value, Mapping | list | tuple):
            shown[key] = f"<{type(value).__name__} of {len(value)} items>"
        else:
            shown[key] = f"<{type(value).__name__} of {len(text)} characters>"
    return shown
