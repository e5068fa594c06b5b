"""The inventory arguments as pytest sees them before the plugin is loaded (see _private/pytest_internals.py)."""

from __future__ import annotations

import pytest

from pytest_mh_ansible._private.pytest_internals import split_inventory_args


@pytest.mark.parametrize(
    ("args", "rest", "values"),
    [
        (["-i", "/inv/a.yml", "tests"], ["tests"], ["/inv/a.yml"]),
        (["-i/inv/a.yml", "tests"], ["tests"], ["/inv/a.yml"]),
        (["--mh-inventory", "/inv/a.yml", "-x"], ["-x"], ["/inv/a.yml"]),
        (["--mh-inventory=/inv/a.yml", "-x"], ["-x"], ["/inv/a.yml"]),
        (["-i", "a.ini", "-v", "--mh-inventory=b.ini", "-ic.ini"], ["-v"], ["a.ini", "b.ini", "c.ini"]),
        (["-x", "tests/test_a.py::test_b"], ["-x", "tests/test_a.py::test_b"], []),
        (["-k", "x", "--", "-i", "literal"], ["-k", "x", "--", "-i", "literal"], []),
        (["--mh-inventory-extra", "x"], ["--mh-inventory-extra", "x"], []),
        (["tests", "-i"], ["tests"], []),
    ],
)
def test_split_inventory_args__every_argparse_form(args: list[str], rest: list[str], values: list[str]) -> None:
    assert split_inventory_args(args) == (rest, values)


def test_split_inventory_args__leaves_short_option_alone_when_another_plugin_owns_it() -> None:
    assert split_inventory_args(["-i", "x", "--mh-inventory=y"], short=False) == (["-i", "x"], ["y"])
