"""Reading Ansible inventories with ansible-core's own machinery, once per session (unchanged ones: from a cache)."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, final

from ...errors import InventoryError
from ..secrets import secrets
from . import compat, inventory_cache

if TYPE_CHECKING:  # ansible-core is imported when a parse needs it: a cached inventory needs none of it
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from ansible.vars.manager import VariableManager

    from .vault import VaultSecrets

__all__ = ["Inventory", "InventoryHost"]

_BUILTIN_GROUPS = frozenset({"all", "ungrouped"})

# Magic variables that hold plain inventory data: nothing in them to template, and
# `groups` (every host of every group) would make templating a host's variables slow.
_NOT_TEMPLATED = frozenset(
    {
        "ansible_config_file",
        "ansible_facts",
        "ansible_playbook_python",
        "ansible_version",
        "group_names",
        "groups",
        "inventory_dir",
        "inventory_file",
        "inventory_hostname",
        "inventory_hostname_short",
        "playbook_dir",
    }
)

_lock = threading.RLock()

# Not kept in the inventory cache: Ansible makes them anew in every process (``omit`` is a random token).
_PER_PROCESS = frozenset({"omit", "hostvars"})
# Not searched for Jinja before caching: plain data the VariableManager builds, never templated.
_NOT_TEMPLATED_OR_BUILT = _NOT_TEMPLATED | _PER_PROCESS
# Variables that name a source file or its directory: kept relative to the source, which may move
# between runs (``--mh-config`` writes its inventory to a new temporary directory each time).
_SOURCE_PATHS = ("inventory_file", "inventory_dir")


@final
@dataclass(frozen=True)
class InventoryHost:
    """One host of an inventory, with its variables as ``ansible-playbook`` sees them.

    ``variables`` are computed on first access (vault values decrypted, templates rendered,
    plain Python types) and hidden from ``repr`` because they hold secrets.

    Example::

        host = inventory.host("client1")
        host.groups  # ('client', 'lab')
        host.variables["ansible_host"]  # 'client1.lab'
    """

    name: str
    groups: tuple[str, ...]
    variables: Mapping[str, Any] = field(repr=False, compare=False)


@final
@dataclass(eq=False)
class _Parsed:
    """What ansible-core made of the sources: kept for playbook runs and for rendering variables."""

    loader: DataLoader
    manager: InventoryManager
    variable_manager: VariableManager
    vault_secrets: VaultSecrets
    raw_vars: dict[str, dict[str, Any]]  # each selected host's variables, merged by Ansible, not yet templated
    warnings: list[str]


@final
@dataclass(eq=False, repr=False)
class Inventory:
    """An Ansible inventory read once with ansible-core, for the whole session.

    ``sources`` have the meaning of ``ansible-playbook -i``: files (INI, YAML, JSON),
    directories, executable scripts, inventory plugin configs and host lists (``"h1,h2,"``).

    Example::

        inventory = Inventory.load(["inventory/hosts.yml"], vault_password_files=["~/.vault"])
        [host.name for host in inventory.hosts_in_group("client")]  # ['client1', 'client2']
    """

    sources: tuple[str, ...]
    _parsed: _Parsed | None
    _warnings: list[str]
    _cached: Mapping[str, Any] | None = None  # an inventory_cache entry, when the parse was skipped
    _parse: Callable[[], _Parsed] | None = None  # how to parse the sources when ansible-core is wanted after all
    groups: tuple[str, ...] = field(init=False)
    hosts: tuple[InventoryHost, ...] = field(init=False)

    def __post_init__(self) -> None:
        self._parse_lock = threading.Lock()
        if self._cached is not None:
            self._from_cache(self._cached)
            return
        manager = self.ansible.manager
        self.groups = tuple(name for name in manager.groups if name not in _BUILTIN_GROUPS)
        selected = {host.name for host in manager.get_hosts("all")}
        hosts = []
        for name, host in manager.hosts.items():
            if name not in selected:
                continue
            member_of = {group.name for group in host.get_groups()}
            hosts.append(
                InventoryHost(
                    name=name,
                    groups=tuple(group for group in self.groups if group in member_of),
                    variables=_LazyVariables(self, name),
                )
            )
        self.hosts = tuple(hosts)
        self._by_name = {host.name: host for host in self.hosts}
        self._all_names = frozenset(manager.hosts)
        self._ungrouped = frozenset(host.name for host in manager.groups["ungrouped"].get_hosts())

    def _from_cache(self, entry: Mapping[str, Any]) -> None:
        self.groups = tuple(entry["groups"])
        variables: Mapping[str, dict[str, Any]] = entry["vars"]
        self.hosts = tuple(
            InventoryHost(name, tuple(groups), _restore_paths(variables[name], entry["resolved"]))
            for name, groups in entry["hosts"]
        )
        for host in self.hosts:
            _add_secret_vars(host.variables)
        self._by_name = {host.name: host for host in self.hosts}
        self._all_names = frozenset(entry["all_hosts"])
        self._ungrouped = frozenset(entry["ungrouped"])

    @property
    def ansible(self) -> _Parsed:
        """ansible-core's objects for these sources, made on first use when the inventory came from the cache."""
        if self._parsed is None:
            with self._parse_lock:
                if self._parsed is None:
                    assert self._parse is not None
                    self._parsed = self._parse()
        return self._parsed

    @property
    def loader(self) -> DataLoader:
        """Ansible's DataLoader (with the vault secrets) for later playbook runs."""
        return self.ansible.loader

    @property
    def inventory_manager(self) -> InventoryManager:
        """Ansible's InventoryManager, with ``--limit`` applied."""
        return self.ansible.manager

    @property
    def variable_manager(self) -> VariableManager:
        """Ansible's VariableManager over this inventory, for later playbook runs."""
        return self.ansible.variable_manager

    @property
    def _vault_secrets(self) -> VaultSecrets:
        """The vault secrets the sources were read with (the executor decrypts module arguments with them)."""
        return self.ansible.vault_secrets

    @property
    def from_cache(self) -> bool:
        """Whether the hosts and variables came from the inventory cache (ansible-core parsed nothing yet)."""
        return self._cached is not None

    @classmethod
    def load(
        cls,
        sources: Sequence[str],
        *,
        vault_password_files: Sequence[str] = (),
        vault_ids: Sequence[str] = (),
        limit: str | None = None,
        basedir: str | None = None,
        cache: bool | None = None,
    ) -> Inventory:
        """Parse ``sources`` and check every host's variables, like ``ansible-playbook -i ... -l ...``.

        :param sources: ``-i`` values; relative paths are relative to ``basedir`` (else the cwd).
        :param vault_password_files: ``--vault-password-file`` values (files or scripts).
        :param vault_ids: ``--vault-id`` values (``label@file``).
        :param limit: ``--limit`` host pattern.
        :param basedir: Where relative paths start, usually the pytest rootdir.
        :param cache: Use and fill the cache of static inventories (:mod:`.inventory_cache`); by default
            unless ``MH_ANSIBLE_INVENTORY_CACHE=off``.
        :raises InventoryError: a source is missing or unparsable, a vault cannot be
            decrypted, ...; the message names the file and never shows a secret.
        """
        if isinstance(sources, str):
            sources = [sources]
        base = os.path.abspath(basedir) if basedir else os.getcwd()
        resolved = [_resolve_source(source, base) for source in sources]
        paths = [path for path, _ in resolved]
        parse = functools.partial(_parse, sources, resolved, base, vault_password_files, vault_ids, limit)
        key = None
        if cache is None:
            cache = inventory_cache.enabled()
        if cache and not vault_password_files and not vault_ids:
            key = inventory_cache.cache_key(paths, limit=limit, base=base)
        entry = inventory_cache.read(key) if key else None
        if entry is not None:
            with contextlib.suppress(KeyError, TypeError, ValueError, AttributeError):  # a damaged entry: a miss
                return cls(tuple(sources), None, list(entry.get("warnings", [])), {**entry, "resolved": paths}, parse)
        parsed = parse()
        inventory = cls(tuple(sources), parsed, parsed.warnings)
        # Kept only if no input changed while ansible-core read them (else the entry would hold the old key).
        if key and inventory_cache.cache_key(paths, limit=limit, base=base) == key:
            stored = inventory._cache_entry(paths)
            if stored is not None:
                inventory_cache.store(key, stored)
        return inventory

    def _cache_entry(self, sources: Sequence[str]) -> dict[str, Any] | None:
        """What the cache keeps of this inventory, or None when a variable holds Jinja (rendered anew each run)."""
        parsed = self.ansible
        for raw in parsed.raw_vars.values():
            if any(inventory_cache.holds_template(v) for k, v in raw.items() if k not in _NOT_TEMPLATED_OR_BUILT):
                return None
        variables = {}
        for host in self.hosts:
            rendered = {k: v for k, v in host.variables.items() if k not in _PER_PROCESS}
            variables[host.name] = _relative_paths(rendered, sources)
        return {
            "sources": list(sources),
            "groups": list(self.groups),
            "hosts": [[host.name, list(host.groups)] for host in self.hosts],
            "all_hosts": sorted(self._all_names),
            "ungrouped": sorted(self._ungrouped),
            "vars": variables,
            "warnings": list(self._warnings),
        }

    @property
    def warnings(self) -> tuple[str, ...]:
        """What Ansible warned about while reading the inventory (secrets masked)."""
        return tuple(self._warnings)

    def host(self, name: str) -> InventoryHost:
        """The host called ``name``.

        :raises KeyError: no such host (or it is outside ``--limit``).
        """
        try:
            return self._by_name[name]
        except KeyError:
            if name in self._all_names:
                raise KeyError(f"host {name!r} is excluded by --limit") from None
            known = ", ".join(self._by_name) or "none"
            raise KeyError(f"no host {name!r} in inventory {', '.join(self.sources)} (hosts: {known})") from None

    def hosts_in_group(self, group: str) -> tuple[InventoryHost, ...]:
        """The hosts of ``group`` and its children, in inventory order.

        :raises KeyError: no such group.
        """
        if group == "all":
            return self.hosts
        if group not in self.groups and group != "ungrouped":
            known = ", ".join(self.groups) or "none"
            raise KeyError(f"no group {group!r} in inventory {', '.join(self.sources)} (groups: {known})")
        if group == "ungrouped":
            return tuple(host for host in self.hosts if host.name in self._ungrouped)
        return tuple(host for host in self.hosts if group in host.groups)

    def _compute_variables(self, name: str) -> dict[str, Any]:
        from ansible.template import Templar

        from .vault import vault_context

        raw = self.ansible.raw_vars[name]
        with _lock, _captured_display() as capture, vault_context(self.ansible.vault_secrets):
            templar = Templar(loader=self.loader, variables=raw)
            result = {str(key): self._render(name, key, value, templar, capture) for key, value in raw.items()}
            result.pop("hostvars", None)
        _add_secret_vars(result)
        self._warnings.extend(secrets.mask(message) for message in capture.warnings)
        return result

    def _compute_variable(self, name: str, key: str) -> Any:
        """One variable of host ``name``, as :meth:`_compute_variables` gives it (KeyError if it has none).

        The session reads a few variables (``mh_role``, ``mh_domain``...) of every host to map
        roles: rendering all variables of 200 hosts for that took longer than the rest of the start.
        """
        from ansible.template import Templar

        from .vault import vault_context

        raw = self.ansible.raw_vars[name]
        if key == "hostvars" or key not in raw:
            raise KeyError(key)
        with _lock, _captured_display() as capture, vault_context(self.ansible.vault_secrets):
            templar = Templar(loader=self.loader, variables=raw)
            value = self._render(name, key, raw[key], templar, capture)
            # The host's secrets are known from now on, as when all its variables are rendered:
            # a playbook over the whole inventory must not print the password of a host no test used.
            held = {k: v for k, v in raw.items() if k not in (key, "hostvars") and _holds_secret(k, v)}
            rendered = {k: self._render(name, k, v, templar, capture) for k, v in held.items()}
        _add_secret_vars({key: value, **rendered})
        self._warnings.extend(secrets.mask(message) for message in capture.warnings)
        return value

    def _render(self, name: str, key: str, value: Any, templar: Templar, capture: _DisplayCapture) -> Any:
        from ansible.errors import AnsibleError
        from ansible.parsing.vault import AnsibleVaultError

        from .vault import describe_vault_failure

        if key == "hostvars":
            return None
        rendered = value
        if key not in _NOT_TEMPLATED:
            try:
                rendered = templar.template(value)
            except AnsibleVaultError:
                failure = describe_vault_failure(self.ansible.vault_secrets)
                raise InventoryError(name, f"variable {key!r}: {failure}") from None
            except AnsibleError as err:
                # ansible-playbook fails only when a task uses it; we keep the raw text.
                capture.warnings.append(f"{name}: variable {key!r} cannot be templated: {_describe(err)}")
        return _plain(rendered)


def _parse(  # noqa: PLR0917 - bound by functools.partial in Inventory.load
    sources: Sequence[str],
    resolved: Sequence[tuple[str, str]],
    base: str,
    vault_password_files: Sequence[str],
    vault_ids: Sequence[str],
    limit: str | None,
) -> _Parsed:
    """ansible-core's parse of ``resolved`` (see :meth:`Inventory.load`)."""
    from ansible.errors import AnsibleError
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.manager import VariableManager

    from .runtime import init_ansible
    from .vault import check_vaulted_vars_files, install_vault_context, load_vault_secrets, vault_context

    with _lock, _captured_display() as capture:
        init_ansible()
        _forget_vars_files_cache()
        loader = DataLoader()
        loader.set_basedir(base)
        vault_secrets = load_vault_secrets(loader, vault_password_files, vault_ids, basedir=base)
        with vault_context(vault_secrets):
            manager = _tracking_manager_class()(loader, [path for path, _ in resolved], capture)
            labels = dict(resolved)
            try:
                manager.parse_sources(cache=True)
            except AnsibleError as err:
                manager.raise_for_failures(labels, base)
                raise InventoryError(", ".join(sources), secrets.mask(_describe(err))) from None
            manager.raise_for_failures(labels, base)

            check_vaulted_vars_files(
                loader,
                [path if os.path.isdir(path) else os.path.dirname(path) for path, _ in resolved if "," not in path],
                {"group_vars": set(manager.groups), "host_vars": set(manager.hosts)},
                vault_secrets,
                base,
            )
            try:
                if limit:
                    manager.subset(limit)
                selected = manager.get_hosts("all")
            except AnsibleError as err:
                raise InventoryError(", ".join(sources), f"--limit {limit!r}: {_describe(err)}") from None
            variable_manager = VariableManager(loader=loader, inventory=manager)
            raw_vars = {host.name: _raw_host_vars(variable_manager, host, vault_secrets, base) for host in selected}
        install_vault_context(vault_secrets)
    warnings = [secrets.mask(message) for message in capture.warnings]
    if limit and not raw_vars and manager.hosts:
        warnings.append(f"--limit {limit!r} matches no host of the inventory")

    return _Parsed(loader, manager, variable_manager, vault_secrets, raw_vars, warnings)


@final
class _LazyVariables(Mapping[str, Any]):
    """A host's variables, computed on first use (templating every host up front is slow)."""

    def __init__(self, inventory: Inventory, name: str) -> None:
        self._inventory = inventory
        self._name = name
        self._data: dict[str, Any] | None = None

    def _get(self) -> dict[str, Any]:
        if self._data is None:
            self._data = self._inventory._compute_variables(self._name)
        return self._data

    def __getitem__(self, key: str) -> Any:
        if self._data is None:  # one variable: the others stay unrendered until they are wanted
            return self._inventory._compute_variable(self._name, key)
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __repr__(self) -> str:
        return f"<variables of host {self._name!r}>"


class _DisplayCapture:
    """What Ansible's Display was asked to show, kept instead of printed."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.source_stack: list[str] = []
        self.failures: dict[str, list[tuple[str, BaseException]]] = {}

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.warnings.append(str(msg))

    def deprecated(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.warnings.append(f"[DEPRECATION] {msg}")

    def error_as_warning(self, msg: str | None, exception: BaseException, *args: Any, **kwargs: Any) -> None:
        if self.source_stack:
            self.failures.setdefault(self.source_stack[-1], []).append((str(msg or ""), exception))
        else:
            self.warnings.append(f"{msg or ''} {_describe(exception)}".strip())

    def error(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        self.warnings.append(_describe(msg) if isinstance(msg, BaseException) else str(msg))


@contextlib.contextmanager
def _captured_display() -> Iterator[_DisplayCapture]:
    """Silence Ansible's Display (a process-wide singleton) and collect what it would print."""
    capture = _DisplayCapture()
    with compat.display_methods_replaced(
        warning=capture.warning,
        deprecated=capture.deprecated,
        error_as_warning=capture.error_as_warning,
        error=capture.error,
    ):
        yield capture


@functools.cache
def _tracking_manager_class() -> Any:
    """The InventoryManager subclass below, made on first use (ansible-core is imported then, not with this module)."""
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager

    from .vault import display_path

    class _TrackingInventoryManager(InventoryManager):  # type: ignore[misc]
        """InventoryManager that remembers which source files parsed, and why the others did not.

        Ansible (by default) only warns about an unparsable source and goes on with an
        empty inventory; we turn that into an error naming the file.
        """

        def __init__(self, loader: DataLoader, sources: list[str], capture: _DisplayCapture) -> None:
            self._mh_capture = capture
            self._mh_parsed: dict[str, bool] = {}
            super().__init__(loader, sources=sources, parse=False)

        def parse_source(self, source: str, cache: bool = False) -> bool:
            self._mh_capture.source_stack.append(source)
            try:
                parsed = bool(super().parse_source(source, cache=cache))
            except AnsibleError:
                # ansible.cfg may say any_unparsed_is_failed: the failures were captured already
                self._mh_parsed.setdefault(source, False)
                raise
            finally:
                self._mh_capture.source_stack.pop()
            # Nested directories of a directory source may legitimately hold no inventory.
            if not os.path.isdir(source) or source in compat.inventory_sources(self):
                self._mh_parsed[source] = parsed
            return parsed

        def raise_for_failures(self, labels: Mapping[str, str], base: str) -> None:
            for source, parsed in self._mh_parsed.items():
                if parsed:
                    continue
                label = labels.get(source) or display_path(source, base)
                if os.path.isdir(source):
                    raise InventoryError(label, "directory holds no inventory file that Ansible could parse")
                failures = self._mh_capture.failures.get(source, [])
                if not failures:
                    raise InventoryError(
                        label, "no enabled inventory plugin accepts it (see ANSIBLE_INVENTORY_ENABLED)"
                    )
                plugin, err = _most_relevant(source, failures)
                raise InventoryError(label, f"cannot be parsed as an inventory ({plugin} plugin): {secrets.mask(err)}")

    return _TrackingInventoryManager


def _most_relevant(source: str, failures: list[tuple[str, BaseException]]) -> tuple[str, str]:
    """Pick the failure that explains the file best: Ansible tries every plugin on it."""
    by_plugin: dict[str, str] = {}
    for msg, exc in failures:
        plugin = msg.split("'")[1] if msg.count("'") >= 2 else "?"
        by_plugin.setdefault(plugin, _describe(exc))
    ext = os.path.splitext(source)[1].lower()
    if ext in (".yml", ".yaml", ".json"):
        auto = by_plugin.get("auto", "")
        order = ["yaml", "auto"] if "no root 'plugin' key" in auto or not auto else ["auto", "yaml"]
        order += ["script", "ini", "toml"]
    elif ext == ".toml":
        order = ["toml", "ini", "script"]
    elif os.access(source, os.X_OK):
        order = ["script", "ini"]
    else:
        order = ["ini", "script", "yaml", "auto"]
    for plugin in order + list(by_plugin):
        if plugin in by_plugin:
            return plugin, by_plugin[plugin]
    return "?", "unknown error"


def _describe(err: Any) -> str:
    """Ansible's message for ``err`` with its cause and origin (file:line:col), on one line or few."""
    message = str(getattr(err, "message", None) or err).strip()
    origin = getattr(err, "obj", None)
    line = getattr(origin, "line_num", None)
    if line:
        col = getattr(origin, "col_num", None)
        message += f" (line {line}" + (f", column {col})" if col else ")")
    # e.g. the script plugin puts the script's stderr here
    help_text = compat.error_help_text(err)
    if help_text and help_text.strip():
        message += f"\n{help_text.strip()}"
    return message


def _forget_vars_files_cache() -> None:
    """Make group_vars/host_vars be looked up afresh, as a new ``ansible-playbook`` would.

    The builtin host_group_vars plugin caches, per process, which vars files exist and
    which group_vars/host_vars directories do not; a later load would miss new files.
    """
    compat.forget_vars_files_cache()


def _resolve_source(source: str, base: str) -> tuple[str, str]:
    """``(path or host list, label for messages)``; a missing path is our error, not a warning."""
    if "," in source:
        return source, source
    path = os.path.normpath(os.path.join(base, os.path.expanduser(source)))
    if not os.path.exists(path):
        raise InventoryError(source, "no such file or directory")
    return path, source


def _raw_host_vars(
    variable_manager: VariableManager, host: Any, vault_secrets: VaultSecrets, base: str
) -> dict[str, Any]:
    """A host's variables before templating; inline vault values are decrypted to check them."""
    from ansible.errors import AnsibleError
    from ansible.parsing.vault import AnsibleVaultError

    from .vault import describe_vault_failure

    try:
        raw = dict(variable_manager.get_vars(host=host, include_hostvars=True))
    except AnsibleVaultError:
        raise InventoryError(host.name, describe_vault_failure(vault_secrets)) from None
    except AnsibleError as err:
        raise InventoryError(host.name, f"variables cannot be read: {secrets.mask(_describe(err))}") from None
    for key, value in raw.items():
        if key not in _INVENTORY_STRUCTURE:
            check_inline_vault(value, key, vault_secrets, host.name, base)
    return raw


def check_inline_vault(value: Any, key: str, vault_secrets: VaultSecrets, host: str, base: str) -> None:
    """:func:`.vault.check_inline_vault`, imported when first called (vault.py imports ansible-core)."""
    from .vault import check_inline_vault as check

    check(value, key, vault_secrets, host, base)


_INVENTORY_STRUCTURE = frozenset({"hostvars", "groups"})
"""Variables the VariableManager builds from the whole inventory (every host, every group's members),
never read from a file: walking them for each host made the check quadratic (200 hosts: 85,000 calls)."""


_UNTAGGED = frozenset({str, int, float, bool})


def _plain(value: Any) -> Any:
    """Plain Python data: no tagged str/int subclasses, no EncryptedString, no tuples."""
    if value is None or type(value) in _UNTAGGED:
        return value  # exactly a builtin type (bool has no subclass): no tag, a vaulted or tagged value is a subclass
    from ansible.parsing.vault import EncryptedString, VaultHelper

    from .vault import decrypt_value

    if isinstance(value, EncryptedString):
        return decrypt_value(value)
    if isinstance(value, str):
        if VaultHelper.get_ciphertext(value, with_tags=False) is not None:
            secrets.add(value)
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k) if isinstance(k, str) else _plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(item) for item in value]
    return value


def _holds_secret(name: str, value: Any) -> bool:
    """Whether variable ``name`` is secret-named or holds a secret-named key at any depth (unrendered)."""
    if secrets.is_secret_name(name):
        return True
    if isinstance(value, Mapping):
        return any(_holds_secret(str(k), v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(isinstance(item, Mapping) and _holds_secret("", item) for item in value)
    return False


def _add_secret_vars(variables: Mapping[str, Any]) -> None:
    """Register values of secret-named variables, at any depth."""
    secrets.add_from_vars(variables)


def _relative_paths(variables: dict[str, Any], sources: Sequence[str]) -> dict[str, Any]:
    """``variables`` with ``inventory_file``/``inventory_dir`` as ``[source index, path inside it]``."""
    result = dict(variables)
    for key in _SOURCE_PATHS:
        value = result.get(key)
        if not isinstance(value, str):
            continue
        for index, source in enumerate(sources):
            root = source if os.path.isdir(source) else os.path.dirname(source)
            if value == source:
                result[key] = [index, "", True]
                break
            if value == root or value.startswith(root + os.sep):
                result[key] = [index, os.path.relpath(value, root), False]
                break
    return result


def _restore_paths(variables: Mapping[str, Any], sources: Sequence[str]) -> dict[str, Any]:
    """The inverse of :func:`_relative_paths` for this run's ``sources`` (absolute, as ``load`` makes them)."""
    result = dict(variables)
    for key in _SOURCE_PATHS:
        value = result.get(key)
        if isinstance(value, list) and len(value) == 3 and isinstance(value[0], int) and value[0] < len(sources):
            index, inside, whole = value
            source = sources[index]
            if whole:
                result[key] = source
            else:
                root = source if os.path.isdir(source) else os.path.dirname(source)
                result[key] = os.path.normpath(os.path.join(root, inside))
    return result
