"""Secret values known to the session, and masking them out of every text we show."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["MASK", "SECRET_NAME_RE", "SecretStore", "is_secret_name", "mask_args", "secrets"]

MASK = "********"

# Variable and argument names whose values are secrets (peers' and Ansible's own convention).
SECRET_NAME_RE = re.compile(r"(password|passphrase|passwd|secret|token|private_key_pass|_pass$|^pass$)", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """True for variable or argument names that hold secrets (``ansible_password``, ``api_token``)."""
    return bool(SECRET_NAME_RE.search(name))


class SecretStore:
    """Secret strings of this process, masked out of logs, reports and error messages.

    Secrets are process-wide (Ansible's vault secrets are too), so one store serves the
    whole session. Values shorter than 3 characters are not masked: they would mangle
    ordinary text and give away nothing.

    Example::

        secrets.add("s3cr3t")
        secrets.mask("sshpass -p s3cr3t")  # 'sshpass -p ********'
    """

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()

    def add(self, value: object) -> None:
        """Remember a secret value (strings; other types are turned into strings)."""
        if value is None or isinstance(value, bool):
            return
        text = str(value)
        if len(text) < 3:
            return
        with self._lock:
            if text not in self._values:
                self._values.add(text)
                self._pattern = None

    def add_from_vars(self, variables: Mapping[str, Any]) -> None:
        """Remember the values of every variable whose name says it is a secret."""
        for name, value in variables.items():
            if is_secret_name(name) and isinstance(value, str | int | float):
                self.add(value)

    def add_all(self, values: Iterable[object]) -> None:
        for value in values:
            self.add(value)

    def mask(self, text: str) -> str:
        """Return ``text`` with every known secret replaced by ``********``."""
        return self.substitute(text, lambda secret: MASK)

    def substitute(self, text: str, replacement: Callable[[str], str]) -> str:
        """Return ``text`` with every known secret replaced by ``replacement(secret)``.

        Example::

            secrets.substitute("sshpass -p s3cr3t", lambda s: "{{ password }}")  # 'sshpass -p {{ password }}'
        """
        if not self._values or not text:
            return text
        pattern = self._pattern
        if pattern is None:
            with self._lock:
                ordered = sorted(self._values, key=len, reverse=True)
                pattern = self._pattern = re.compile("|".join(re.escape(v) for v in ordered))
        return pattern.sub(lambda match: replacement(match.group(0)), text)

    def mask_data(self, data: Any) -> Any:
        """Mask secrets in nested data (dicts, lists, strings); secret-named keys are masked whole."""
        if isinstance(data, str):
            return self.mask(data)
        if isinstance(data, Mapping):
            return {
                k: (MASK if isinstance(k, str) and is_secret_name(k) and v not in (None, "") else self.mask_data(v))
                for k, v in data.items()
            }
        if isinstance(data, list | tuple):
            return type(data)(self.mask_data(v) for v in data)
        return data

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._pattern = None


secrets = SecretStore()
"""The store of this process."""


def mask_args(args: Mapping[str, Any], *, no_log: bool = False) -> dict[str, Any]:
    """Module arguments fit for logs and messages: every value hidden with ``no_log``, else secrets masked."""
    if no_log:
        return {str(key): MASK for key in args}
    masked = secrets.mask_data(dict(args))
    return dict(masked) if isinstance(masked, Mapping) else {}
