"""Helpers of the core integration tests: inventory lines and vault values for the lab hosts."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any


def connection_line(variables: dict[str, Any], *, keys: tuple[str, ...] = ()) -> str:
    """An INI host line's variables for the lab host (ansible_host, user, key, ssh args)."""
    wanted = keys or ("ansible_host", "ansible_user", "ansible_ssh_private_key_file", "ansible_python_interpreter")
    parts = [f"{key}={variables[key]}" for key in wanted]
    parts.append(f"ansible_ssh_common_args='{variables['ansible_ssh_common_args']}'")
    return " ".join(parts)


def vault_encrypt(value: str, password_file: Path, name: str) -> str:
    """``ansible-vault encrypt_string`` output for ``name: value`` (YAML, with the !vault tag)."""
    # The value goes on stdin: a generated password may start with "-" and look like an option.
    out = subprocess.run(
        [
            str(Path(sys.executable).with_name("ansible-vault")),
            "encrypt_string",
            "--vault-password-file",
            str(password_file),
            "--stdin-name",
            name,
        ],
        input=value,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return textwrap.dedent(out)
