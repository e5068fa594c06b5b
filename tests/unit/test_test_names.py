"""CI collects tests/unit and tests/functional in one pytest run: their test modules need names of their own."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_unit_and_functional_test_modules_have_distinct_names() -> None:
    # Without packages, pytest imports each by its basename: a second one of the same name stops
    # the whole collection ("import file mismatch"), as tests/functional/test_inventory_cache.py did.
    names = Counter(path.name for folder in ("unit", "functional") for path in (TESTS / folder).glob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
