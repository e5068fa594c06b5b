"""Unit tests of how playbook paths are found (``PlaybookRunner.resolve``), and what a missing one says."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mh_ansible._private.ansible.playbooks import PlaybookRunner
from pytest_mh_ansible.errors import MultihostError


def test_resolve__relative_path_against_each_search_dir(tmp_path: Path) -> None:
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "play.yml").write_text("[]\n")
    runner = PlaybookRunner(("hosts.ini",), search_dirs=(str(tmp_path), str(tmp_path / "extra")))
    assert runner.resolve("play.yml") == tmp_path / "extra" / "play.yml"


def test_resolve__missing_relative_path_names_where_it_looked(tmp_path: Path) -> None:
    runner = PlaybookRunner(("hosts.ini",), search_dirs=(str(tmp_path),))
    with pytest.raises(MultihostError, match=rf"^playbook 'nope.yml' not found \(looked in {tmp_path}\)$"):
        runner.resolve("nope.yml")


def test_resolve__missing_absolute_path_does_not_claim_a_search(tmp_path: Path) -> None:
    runner = PlaybookRunner(("hosts.ini",), search_dirs=(str(tmp_path),))
    missing = str(tmp_path / "nope.yml")
    with pytest.raises(MultihostError) as info:
        runner.resolve(missing)
    assert str(info.value) == f"playbook {missing!r} not found"


def test_run_reverted__unknown_keyword_names_it_and_the_known_ones(tmp_path: Path) -> None:
    """``mh.playbook(path, roles, **options)``: a misspelt keyword fails before anything runs."""
    runner = PlaybookRunner(("hosts.ini",), search_dirs=(str(tmp_path),))
    with pytest.raises(TypeError) as info:
        runner.run_reverted("play.yml", [], extra_var={"a": 1})  # type: ignore[call-arg]
    message = str(info.value)
    assert message.startswith("playbook('play.yml'): unknown keyword(s) extra_var; the keywords are ")
    assert "extra_vars, raise_on_error, revert_paths, skip_tags, tags, teardown" in message
