"""Ansible vault for inventories: passwords, the process-wide vault context, checks that name the failing file."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.parsing.vault import (
    EncryptedString,
    VaultLib,
    VaultSecret,
    VaultSecretsContext,
    get_file_vault_secret,
    is_encrypted_file,
)

from ...errors import InventoryError
from ..secrets import secrets
from . import compat

__all__ = [
    "NO_PASSWORD_HINT",
    "VaultSecrets",
    "add_secret_leaves",
    "check_inline_vault",
    "check_vaulted_file",
    "check_vaulted_vars_files",
    "decrypt_value",
    "describe_vault_failure",
    "display_path",
    "install_vault_context",
    "is_vault_encrypted_file",
    "load_vault_secrets",
    "origin_of",
    "register_playbook_vault_values",
    "vault_context",
    "vault_encrypter",
]

VaultSecrets = list[tuple[str, VaultSecret]]
"""Ansible's own shape: ``[(vault_id, secret), ...]``, the first match decrypts."""

NO_PASSWORD_HINT = "(--mh-vault-password-file or --mh-vault-id)"

# The VaultSecretsContext we installed last, so that a later load may replace it (ours) but
# never one that somebody else (an in-process ansible CLI) installed.
_installed: VaultSecretsContext | None = None
_lock = threading.RLock()


def load_vault_secrets(
    loader: DataLoader,
    password_files: Sequence[str],
    vault_ids: Sequence[str],
    *,
    basedir: str | None = None,
) -> VaultSecrets:
    """Read vault passwords the way ``ansible-playbook`` does and hand them to ``loader``.

    A password file is read, or run when it is executable (``--vault-id`` client scripts
    included). With neither files nor ids, Ansible's configuration is asked at call time
    (``ANSIBLE_VAULT_PASSWORD_FILE``, ``ANSIBLE_VAULT_IDENTITY_LIST``, ``ansible.cfg``), as
    the ``ansible-playbook`` CLI would. Every password is added to :data:`secrets`.

    :raises InventoryError: naming the password file that cannot be read or run.
    """
    slugs: list[tuple[str, str]] = []  # (vault id, file)
    for vault_id in vault_ids:
        label, sep, path = vault_id.partition("@")
        if not sep:
            label, path = C.DEFAULT_VAULT_IDENTITY, vault_id
        slugs.append((label or C.DEFAULT_VAULT_IDENTITY, path))
    slugs.extend((C.DEFAULT_VAULT_IDENTITY, path) for path in password_files)
    if not slugs:
        # C.DEFAULT_VAULT_PASSWORD_FILE was frozen when ansible was imported; ask again.
        for vault_id in C.config.get_config_value("DEFAULT_VAULT_IDENTITY_LIST") or ():
            label, sep, path = str(vault_id).partition("@")
            if sep and path not in ("prompt", "prompt_ask_vault_pass"):
                slugs.append((label or C.DEFAULT_VAULT_IDENTITY, path))
        configured = C.config.get_config_value("DEFAULT_VAULT_PASSWORD_FILE")
        if configured:
            slugs.append((C.DEFAULT_VAULT_IDENTITY, str(configured)))

    result: VaultSecrets = []
    for label, path in slugs:
        if path in ("prompt", "prompt_ask_vault_pass"):
            raise InventoryError(f"{label}@{path}", "prompting for a vault password is not supported, give a file")
        full = os.path.expanduser(path)
        if basedir and not os.path.isabs(full):
            full = os.path.join(basedir, full)
        if not os.path.isfile(full):
            raise InventoryError(path, "vault password file: no such file")
        try:
            secret = get_file_vault_secret(filename=full, vault_id=label, loader=loader)
            secret.load()
        except AnsibleError as err:
            raise InventoryError(path, f"vault password file cannot be read: {secrets.mask(err.message)}") from None
        if secret.bytes:
            secrets.add(secret.bytes.decode("utf-8", errors="replace"))
        result.append((label, secret))
    loader.set_vault_secrets(result)
    return result


@contextlib.contextmanager
def vault_context(vault_secrets: VaultSecrets) -> Iterator[None]:
    """Make ``vault_secrets`` the process-wide vault context while the block runs.

    ansible-core 2.19 decrypts inline ``!vault`` values lazily through the one
    ``VaultSecretsContext`` of the process, which Ansible lets be initialised only once.
    Inventories loaded one after another (tests do) need their own secrets, so the
    context is swapped in for the block and restored after it.
    """
    with _lock:
        saved = compat.vault_secrets_context()
        compat.replace_vault_secrets_context(VaultSecretsContext(vault_secrets))
        try:
            yield
        finally:
            compat.replace_vault_secrets_context(saved)


def install_vault_context(vault_secrets: VaultSecrets) -> None:
    """Leave ``vault_secrets`` as the process-wide context for later playbook runs.

    Only a context that is unset or that we installed ourselves is replaced: the latest
    inventory load wins, and a context set up by somebody else is left alone.
    """
    global _installed
    with _lock:
        current = compat.vault_secrets_context()
        if current is not None and current is not _installed:
            return
        if current is None and not vault_secrets:
            return  # nothing to decrypt: leave the one-shot initialisation to whoever needs it
        context = VaultSecretsContext(vault_secrets)
        if current is None:
            VaultSecretsContext.initialize(context)
        else:
            compat.replace_vault_secrets_context(context)
        _installed = context


def is_vault_encrypted_file(path: str) -> bool:
    """True when ``path`` is a whole-file vault (``ansible-vault encrypt``)."""
    try:
        with open(path, "rb") as file:
            return bool(is_encrypted_file(file))
    except OSError:
        return False


def check_vaulted_file(path: str, label: str, vault_secrets: VaultSecrets) -> None:
    """Decrypt one whole-file vault with ``vault_secrets`` to fail early and name the file.

    :raises InventoryError: no password given, or none of them decrypts the file.
    """
    if not vault_secrets:
        raise InventoryError(label, f"vault-encrypted content but no vault password given {NO_PASSWORD_HINT}")
    try:
        with open(path, "rb") as file:
            VaultLib(secrets=vault_secrets).decrypt(file.read())
    except AnsibleError:
        raise InventoryError(label, describe_vault_failure(vault_secrets)) from None


def describe_vault_failure(vault_secrets: VaultSecrets) -> str:
    """The message for content that none of ``vault_secrets`` decrypts (never the content)."""
    if not vault_secrets:
        return f"vault-encrypted content but no vault password given {NO_PASSWORD_HINT}"
    ids = ", ".join(repr(label) for label, _ in vault_secrets)
    return f"vault-encrypted content cannot be decrypted with the vault password(s) given (vault ids: {ids})"


def decrypt_value(value: EncryptedString) -> str:
    """The plain text of an inline ``!vault`` value, registered as a secret."""
    plain = str(str(value))  # decrypts (a tagged str), then a plain str
    secrets.add(plain)
    return plain


def display_path(path: str, base: str) -> str:
    """``path`` for messages: relative to ``base`` (the rootdir) when inside it."""
    relative = os.path.relpath(path, base)
    return path if relative.startswith("..") else relative


def check_vaulted_vars_files(
    loader: DataLoader,
    inventory_dirs: Iterable[str],
    names: Mapping[str, set[str]],
    vault_secrets: VaultSecrets,
    base: str,
) -> None:
    """Read the group_vars/host_vars files up front, to name the file that fails.

    Whole-file vaults are decrypted (ansible-core reports "A vault password must be specified
    to decrypt data." without the file) and every other vars file is parsed (ansible-core
    reports a YAML error against the first host that reads it). Only files that Ansible will
    load are checked: ``names`` maps ``group_vars`` and ``host_vars`` to the groups and hosts of
    the inventory.
    """
    for inventory_dir in sorted(set(inventory_dirs)):
        for kind, known in names.items():
            top = os.path.join(inventory_dir, kind)
            if not os.path.isdir(top):
                continue
            for entry in sorted(os.listdir(top)):
                stem, ext = os.path.splitext(entry)
                full = os.path.join(top, entry)
                if entry in known and os.path.isdir(full):
                    files = [os.path.join(d, f) for d, _, fs in sorted(os.walk(full)) for f in sorted(fs)]
                elif (entry in known or (stem in known and ext in (".yml", ".yaml", ".json"))) and os.path.isfile(full):
                    files = [full]
                else:
                    continue
                for file in files:
                    if is_vault_encrypted_file(file):
                        check_vaulted_file(file, display_path(file, base), vault_secrets)
                        add_secret_leaves(loader.load_from_file(file, unsafe=True))
                    elif os.path.splitext(file)[1] in _VARS_EXTENSIONS:
                        _check_parses(loader, file, display_path(file, base))


_VARS_EXTENSIONS = ("", ".yml", ".yaml", ".json")


def _check_parses(loader: DataLoader, path: str, label: str) -> None:
    """Parse a vars file now: Ansible would report its syntax error later against a host, not the file."""
    try:
        loader.load_from_file(path, unsafe=True)
    except AnsibleError as err:
        message = " ".join(str(err.message).split())
        raise InventoryError(label, f"cannot be parsed: {secrets.mask(message)}") from None


def check_inline_vault(value: Any, key: str, vault_secrets: VaultSecrets, host: str, base: str) -> None:
    """Decrypt every inline ``!vault`` value in ``value`` now, to name the file and variable that fail."""
    if isinstance(value, EncryptedString):
        try:
            decrypt_value(value)
        except AnsibleError:
            origin = origin_of(value, base)
            where = origin[0] if origin else host
            line = f" (line {origin[1]})" if origin and origin[1] else ""
            if not vault_secrets:
                message = f"variable {key!r}{line}: vault-encrypted value but no vault password given"
                message += f" {NO_PASSWORD_HINT}"
            else:
                message = f"variable {key!r}{line}: {describe_vault_failure(vault_secrets)}"
            raise InventoryError(where, message) from None
    elif isinstance(value, Mapping):
        for sub_key, sub in value.items():
            check_inline_vault(sub, f"{key}.{sub_key}", vault_secrets, host, base)
    elif isinstance(value, list | tuple):
        for index, sub in enumerate(value):
            check_inline_vault(sub, f"{key}[{index}]", vault_secrets, host, base)


def origin_of(value: Any, base: str) -> tuple[str, int | None] | None:
    """Where a value was read (file relative to ``base``, line), from ansible-core's data tags."""
    origin = compat.value_origin(value)
    if origin is None:
        return None
    return display_path(origin[0], base), origin[1]


def _leaves(data: Any) -> Iterator[Any]:
    """The values of ``data`` that are neither mappings nor lists/tuples, depth first."""
    if isinstance(data, Mapping):
        for value in data.values():
            yield from _leaves(value)
    elif isinstance(data, list | tuple):
        for item in data:
            yield from _leaves(item)
    else:
        yield data


def add_secret_leaves(data: Any) -> None:
    """Register every string of ``data`` (the content of a whole-file vault) as a secret."""
    for leaf in _leaves(data):
        if isinstance(leaf, EncryptedString):
            decrypt_value(leaf)
        elif isinstance(leaf, str):
            # strings only: masking every '389' of a vaulted port would mangle all output
            secrets.add(str(leaf))


def vault_encrypter(password_file: str) -> Callable[[str], str]:
    """A function that encrypts a string as ``ansible-vault encrypt_string`` does, with ``password_file``.

    The file is read (or run, when executable) as ``ansible-vault`` would.

    :raises InventoryError: The password file cannot be read or run.
    """
    loader = DataLoader()
    secrets_ = load_vault_secrets(loader, [password_file], [])
    _label, secret = secrets_[0]

    def encrypt(value: str) -> str:
        encrypted: bytes = VaultLib(secrets_).encrypt(value, secret)
        return encrypted.decode()

    return encrypt


_PLAYBOOK_VARS_DIRS = ("vars", "group_vars", "host_vars")
_MAX_SCANNED = 500


def _playbook_vars_files(directory: str) -> Iterator[str]:
    """The files next to a playbook that it may load vars from: its dir, vars/, group_vars/, host_vars/, roles."""
    roots = [os.path.join(directory, sub) for sub in _PLAYBOOK_VARS_DIRS]
    roles = os.path.join(directory, "roles")
    if os.path.isdir(roles):
        for role in sorted(os.listdir(roles)):
            roots += [os.path.join(roles, role, "vars"), os.path.join(roles, role, "defaults")]
    with contextlib.suppress(OSError):
        for entry in sorted(os.listdir(directory)):
            full = os.path.join(directory, entry)
            if os.path.isfile(full) and os.path.splitext(entry)[1] in (".yml", ".yaml"):
                yield full
    for root in roots:
        for top, _, files in sorted(os.walk(root)):
            for name in sorted(files):
                if os.path.splitext(name)[1] in _VARS_EXTENSIONS:
                    yield os.path.join(top, name)


def _add_encrypted_values(data: Any) -> None:
    for leaf in _leaves(data):
        if isinstance(leaf, EncryptedString):
            decrypt_value(leaf)


def register_playbook_vault_values(directory: str) -> None:
    """Register as secrets the vault values a playbook in ``directory`` may load (its vars files, its roles').

    ``ansible-playbook`` decrypts them in its own process; without this, a task that prints one
    would show it in the playbook's output. Files that cannot be read or decrypted are left for
    ``ansible-playbook`` to report.
    """
    context = VaultSecretsContext.current(optional=True)
    vault_secrets = list(context.secrets) if context is not None else []
    if not vault_secrets:
        return
    loader = DataLoader()
    loader.set_vault_secrets(vault_secrets)
    for count, path in enumerate(_playbook_vars_files(directory)):
        if count >= _MAX_SCANNED:
            break
        try:
            with open(path, "rb") as file:
                if b"$ANSIBLE_VAULT" not in file.read(4_000_000):
                    continue
            with vault_context(vault_secrets):
                data = loader.load_from_file(path, unsafe=True)
                if is_vault_encrypted_file(path):
                    add_secret_leaves(data)
                else:
                    _add_encrypted_values(data)
        except (OSError, AnsibleError):
            continue
