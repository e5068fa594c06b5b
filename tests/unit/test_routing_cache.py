"""The routing-table cache: ansible-core's own parse, kept on disk by content, never stale, never in the way."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import pytest
from ansible.utils.collection_loader import _collection_finder
from ansible.utils.collection_loader._collection_meta import _meta_yml_to_dict

from pytest_mh_ansible._private.ansible import routing_cache


@pytest.fixture(autouse=True)
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "pytest-mh-ansible" / "routing"


def _builtin_runtime() -> bytes:
    ansible = importlib.import_module("ansible")
    return (Path(os.path.dirname(ansible.__file__)) / "config" / "ansible_builtin_runtime.yml").read_bytes()


class _Counting:
    def __init__(self, parse: Any = _meta_yml_to_dict) -> None:
        self.calls = 0
        self._parse = parse

    def __call__(self, data: bytes | str, content_id: Any) -> Any:
        self.calls += 1
        return self._parse(data, content_id)


def test_the_cached_table_is_ansibles_own_parse_and_the_second_read_parses_nothing(cache_home: Path) -> None:
    raw = _builtin_runtime()
    parse = _Counting()
    cached = routing_cache.cached_parser(parse)
    first = cached(raw, ("ansible.builtin", "runtime.yml"))
    second = cached(raw, ("ansible.builtin", "runtime.yml"))
    assert parse.calls == 1
    assert first == second == _meta_yml_to_dict(raw, None)
    assert list(second["plugin_routing"]) == list(first["plugin_routing"])  # order kept too
    assert len(list(cache_home.glob("*.json"))) == 1


def test_changed_content_is_a_new_entry_not_the_old_result(cache_home: Path) -> None:
    parse = _Counting()
    cached = routing_cache.cached_parser(parse)
    assert cached(b"plugin_routing:\n  modules:\n    a: {redirect: x.y.a}\n", None) == {
        "plugin_routing": {"modules": {"a": {"redirect": "x.y.a"}}}
    }
    assert cached("plugin_routing:\n  modules:\n    a: {redirect: x.y.b}\n", None) == {
        "plugin_routing": {"modules": {"a": {"redirect": "x.y.b"}}}
    }
    assert parse.calls == 2
    assert len(list(cache_home.glob("*.json"))) == 2


def test_a_corrupt_entry_is_parsed_again_and_replaced(cache_home: Path) -> None:
    data = b"requires_ansible: '>=2.15'\n"
    routing_cache.cached_parser(_meta_yml_to_dict)(data, None)
    (entry,) = cache_home.glob("*.json")
    entry.write_text("{not json")
    parse = _Counting()
    assert routing_cache.cached_parser(parse)(data, None) == {"requires_ansible": ">=2.15"}
    assert parse.calls == 1
    assert entry.read_text().startswith("{")


def test_an_unwritable_cache_only_costs_the_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file: no directory can be made under it
    parse = _Counting()
    cached = routing_cache.cached_parser(parse)
    assert cached(b"a: b\n", None) == {"a": "b"} == cached(b"a: b\n", None)
    assert parse.calls == 2


def test_a_result_that_is_not_plain_data_is_not_stored(cache_home: Path) -> None:
    parse = _Counting(lambda data, content_id: {"when": (1, 2)})  # a tuple comes back from JSON as a list
    cached = routing_cache.cached_parser(parse)
    assert cached(b"x", None) == {"when": (1, 2)} == cached(b"x", None)
    assert parse.calls == 2
    assert not cache_home.exists() or not list(cache_home.glob("*.json"))


def test_install_wraps_ansibles_parser_once_and_leaves_another_tools_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_collection_finder, "_meta_yml_to_dict", _meta_yml_to_dict)
    routing_cache.install()
    wrapped = _collection_finder._meta_yml_to_dict
    assert wrapped is not _meta_yml_to_dict
    assert getattr(wrapped, "_mh_routing_cache", False)
    routing_cache.install()
    assert _collection_finder._meta_yml_to_dict is wrapped

    def other_tool(data: bytes | str, content_id: Any) -> dict[str, Any]:
        return {}

    monkeypatch.setattr(_collection_finder, "_meta_yml_to_dict", other_tool)
    routing_cache.install()
    assert _collection_finder._meta_yml_to_dict is other_tool


def test_the_default_place_is_the_users_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", "/home/someone")
    assert routing_cache.cache_dir() == Path("/home/someone/.cache/pytest-mh-ansible/routing")
