"""Collection routing metadata (``runtime.yml``) parsed once per content, not once per pytest process.

ansible-core reads the routing table of ``ansible.builtin`` (``ansible_builtin_runtime.yml``, some
370 kB of YAML) the first time anything is loaded from a collection: about 0.15 s of every run's
start-up, and of every xdist worker's. ansible-core leaves a door for exactly this: its
``_meta_yml_to_dict`` "may be monkeypatched" and gets a content id "to allow other implementations
to cache the output". The parse is ansible-core's own; its result (strings, lists and mappings
only: the loader reads every scalar as a string) is kept as JSON under the user's cache directory,
named by the SHA-256 of the YAML bytes, so a changed file is a new entry and never a stale one.

A cache that cannot be read or written is no error: the YAML is parsed as before.

Example::

    install()   # before ansible's plugin loader is initialised (runtime.init_ansible does it)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..local_files import replace_file

__all__ = ["cache_dir", "cached_parser", "install"]

_FORMAT = "1"  # part of every key: a change of how entries are stored makes new ones
_MARK = "_mh_routing_cache"


def cache_dir() -> Path:
    """Where entries live: ``$XDG_CACHE_HOME/pytest-mh-ansible/routing`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-mh-ansible" / "routing"


def cached_parser(parse: Callable[[bytes | str, Any], Any]) -> Callable[[bytes | str, Any], Any]:
    """``parse`` (ansible-core's ``_meta_yml_to_dict``) with its results kept on disk by content.

    Only a result that survives JSON unchanged is stored (it always does with ansible-core's
    loader; a parser patched in by another tool may return other types, and is then only called).
    """

    def parse_cached(data: bytes | str, content_id: Any) -> Any:
        raw = data.encode() if isinstance(data, str) else bytes(data)
        digest = hashlib.sha256(_FORMAT.encode() + b":" + raw).hexdigest()
        entry = cache_dir() / f"{digest}.json"
        with contextlib.suppress(OSError, ValueError):
            stored = json.loads(entry.read_text(encoding="utf-8"))
            if isinstance(stored, dict):
                return stored
        result = parse(data, content_id)
        if isinstance(result, Mapping):
            _store(entry, result)
        return result

    setattr(parse_cached, _MARK, True)
    return parse_cached


def _store(entry: Path, result: Mapping[str, Any]) -> None:
    """Write ``result`` atomically (xdist workers may write the same entry at once); failures are ignored."""
    try:
        text = json.dumps(result, ensure_ascii=False)
        if json.loads(text) != result:  # not plain data: keep nothing
            return
        replace_file(entry, text)
    except (OSError, TypeError, ValueError):
        pass


def install() -> None:
    """Put the cache in front of ansible-core's routing parser, once per process.

    Nothing changes when the parser is missing or was replaced by another tool (ansible-test's
    sanity tests do that): only ansible-core's own function is wrapped.
    """
    from ansible.utils.collection_loader import _collection_finder

    try:
        from ansible.utils.collection_loader._collection_meta import _meta_yml_to_dict as original
    except ImportError:
        return
    parse: Callable[[bytes | str, Any], Any] = original
    if getattr(_collection_finder, "_meta_yml_to_dict", None) is parse:
        _collection_finder._meta_yml_to_dict = cached_parser(parse)
