"""A static inventory's parsed hosts, groups and variables, kept across runs so an unchanged one is not parsed again.

Reading an inventory costs every run ansible-core's ``InventoryManager``, ``VariableManager`` and
templar (about 0.1 s of CPU for two hosts, more with ``group_vars``), before the first test. What the
session needs at start-up (groups, hosts, their variables) is kept as JSON under
``$XDG_CACHE_HOME/pytest-mh-ansible/inventory`` (``~/.cache`` when unset), named by a SHA-256 of
everything the parse depends on:

* the content of every inventory file (each file of a directory source), and of every file under
  ``group_vars/`` and ``host_vars/`` beside the sources and in the base directory;
* the ``ansible.cfg`` in effect (its path and content), every ``ANSIBLE_*`` environment variable,
  ``--mh-limit``, the base and current directories, the Python executable, ansible-core's release
  and this module's and ``inventory.py``'s own source.

Only static inventories are kept: INI, YAML/JSON host files without a ``plugin:`` key, TOML and host
lists. Never one with an executable file (a script), an inventory plugin config, a vault-encrypted
file or value, a variable that holds Jinja (``{{``, ``{%``, ``{#``: a lookup may read anything), a
vault password given, or an ``ansible.cfg``/environment that enables other inventory or vars plugins
or a fact cache. The entries hold the inventory's variables as written, passwords included, like the
files they come from: files are 0600 in a 0700 directory. A missing, unreadable or foreign entry is
a miss; nothing here raises.

Turned off with ``--mh-inventory-cache=off`` or ``MH_ANSIBLE_INVENTORY_CACHE=off``.

Example::

    key = cache_key(["/abs/hosts.yml"], limit=None, base="/abs")  # None: not cacheable
    entry = read(key) if key else None
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..local_files import replace_file

__all__ = ["ENV_SWITCH", "cache_dir", "cache_key", "enabled", "holds_template", "read", "store"]

_FORMAT = "1"
ENV_SWITCH = "MH_ANSIBLE_INVENTORY_CACHE"
_VARS_DIRS = ("group_vars", "host_vars")
_VAULT_MARK = b"$ANSIBLE_VAULT"
_PLUGIN_KEY = re.compile(rb"^(plugin\s*:|\{?\s*\"plugin\"\s*:)", re.MULTILINE)
_TEMPLATE_MARKS = ("{{", "{%", "{#")
# Settings that bring plugins whose output may change without a file changing: never cached.
_DYNAMIC_SETTINGS = ("enable_plugins", "inventory_plugins", "vars_plugins", "fact_caching", "cache_plugin")
_DYNAMIC_ENV = (
    "ANSIBLE_INVENTORY_ENABLED",
    "ANSIBLE_INVENTORY_PLUGINS",
    "ANSIBLE_VARS_ENABLED",
    "ANSIBLE_VARS_PLUGINS",
    "ANSIBLE_CACHE_PLUGIN",
)


class _NotCacheable(Exception):
    """The inventory's parse depends on something besides files: it is parsed every time."""


def enabled(option: str | None = None) -> bool:
    """Whether the cache is on: ``option`` (``--mh-inventory-cache``) wins over the environment; on by default."""
    value = option if option is not None else os.environ.get(ENV_SWITCH, "on")
    return value.strip().lower() not in ("off", "0", "no", "false")


def cache_dir() -> Path:
    """Where entries live: ``$XDG_CACHE_HOME/pytest-mh-ansible/inventory`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-mh-ansible" / "inventory"


def cache_key(sources: Sequence[str], *, limit: str | None, base: str) -> str | None:
    """The key of the parse of ``sources`` (absolute paths or host lists), or None when it must not be cached."""
    try:
        return _key(sources, limit, base)
    except (_NotCacheable, OSError, UnicodeError):
        return None


def _key(sources: Sequence[str], limit: str | None, base: str) -> str:
    digest = hashlib.sha256()

    def feed(*parts: str | bytes) -> None:
        for part in parts:
            data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
            digest.update(len(data).to_bytes(8, "big") + data)

    feed(_FORMAT, repr(limit), os.path.abspath(base), os.getcwd(), sys.executable)
    for own in (Path(__file__), Path(__file__).with_name("inventory.py"), _ansible_release()):
        feed(own.read_bytes())
    environment = sorted((k, v) for k, v in os.environ.items() if k.startswith("ANSIBLE_"))
    if any(name in os.environ for name in _DYNAMIC_ENV):
        raise _NotCacheable("plugins chosen by the environment")
    feed(json.dumps(environment))
    config = _config_file()
    feed(str(config))
    if config is not None:
        text = config.read_bytes()
        if any(word.encode() in text for word in _DYNAMIC_SETTINGS):
            raise _NotCacheable(f"{config} chooses plugins")
        feed(text)
    # group_vars/host_vars beside each source and in the base directory, named by the source's place in the
    # list (a source may move between runs: --mh-config writes its inventory to a new temporary directory)
    vars_roots = {"base": os.path.abspath(base)}
    for index, source in enumerate(sources):
        if "," in source and not os.path.exists(source):
            feed(f"list:{index}", source)
            continue
        feed(f"source:{index}")
        if os.path.isdir(source):
            vars_roots[f"source:{index}"] = source
            for path in _files(source):
                feed(os.path.relpath(path, source), _static_content(path))
        else:
            vars_roots[f"source:{index}"] = os.path.dirname(source)
            feed(_static_content(source))
    for label, root in sorted(vars_roots.items()):
        for name in _VARS_DIRS:
            for path in _files(os.path.join(root, name)):
                feed(label, os.path.relpath(path, root), _static_content(path, inventory=False))
    return digest.hexdigest()


def _ansible_release() -> Path:
    """ansible-core's release.py, found without importing ansible (that import is what the cache avoids)."""
    spec = importlib.util.find_spec("ansible")
    if spec is None or not spec.submodule_search_locations:
        raise _NotCacheable("ansible-core not found")
    return Path(next(iter(spec.submodule_search_locations))) / "release.py"


def _config_file() -> Path | None:
    """The ansible.cfg ansible-core would read, in its order (``ANSIBLE_CONFIG``, ./, ~/, /etc/ansible)."""
    given = os.environ.get("ANSIBLE_CONFIG")
    candidates = [os.path.expanduser(given)] if given else []
    if given and os.path.isdir(candidates[0]):
        candidates[0] = os.path.join(candidates[0], "ansible.cfg")
    candidates += [os.path.join(os.getcwd(), "ansible.cfg"), os.path.expanduser("~/.ansible.cfg")]
    candidates.append("/etc/ansible/ansible.cfg")
    for candidate in candidates:
        if os.path.isfile(candidate):
            return Path(candidate).resolve()
    return None


def _files(root: str) -> Iterable[str]:
    """Every file under ``root`` (nothing when it is no directory), sorted, symlinks followed as Ansible does."""
    if not os.path.isdir(root):
        return []
    found: list[str] = []
    for directory, subdirs, names in os.walk(root, followlinks=True):
        subdirs.sort()
        found.extend(os.path.join(directory, name) for name in sorted(names))
    return found


def _static_content(path: str, *, inventory: bool = True) -> bytes:
    """The bytes of ``path``; raises _NotCacheable for a script, a plugin config or a vaulted file."""
    mode = os.stat(path).st_mode
    if inventory and mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH):
        raise _NotCacheable(f"{path} is executable (a dynamic inventory)")
    data = Path(path).read_bytes()
    if _VAULT_MARK in data:
        raise _NotCacheable(f"{path} holds vault data")
    if inventory and _PLUGIN_KEY.search(data):
        raise _NotCacheable(f"{path} configures an inventory plugin")
    return data


def holds_template(value: Any) -> bool:
    """Whether ``value`` holds Jinja at any depth (a rendered value may then differ from run to run)."""
    if isinstance(value, str):
        return any(mark in value for mark in _TEMPLATE_MARKS)
    if isinstance(value, Mapping):
        return any(holds_template(k) or holds_template(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return any(holds_template(item) for item in value)
    return False


def read(key: str) -> dict[str, Any] | None:
    """The entry stored under ``key``, or None (missing, unreadable, not ours, not of this format)."""
    with contextlib.suppress(OSError, ValueError):
        entry = json.loads((cache_dir() / f"{key}.json").read_text(encoding="utf-8"))
        if isinstance(entry, dict) and entry.get("format") == _FORMAT and entry.get("key") == key:
            hosts = entry.get("hosts")
            if (
                isinstance(entry.get("groups"), list)
                and isinstance(hosts, list)
                and isinstance(entry.get("vars"), dict)
            ):
                return entry
    return None


def store(key: str, entry: Mapping[str, Any]) -> None:
    """Keep ``entry`` under ``key`` (atomically, 0600 in a 0700 directory); a failure only means no cache."""
    try:
        text = json.dumps({**entry, "format": _FORMAT, "key": key}, ensure_ascii=False)
        replace_file(cache_dir() / f"{key}.json", text)
    except (OSError, TypeError, ValueError):
        pass
