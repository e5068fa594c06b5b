"""The inventory arguments as pytest sees them before the plugin is loaded (see _private/pytest_internals.py)."""

from __future__ import annotations

import sys

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


# -- the pytest internals used, on the installed pytest ------------------------------------------
def test_pytest_internals__private_names_exist() -> None:
    """Each private pytest name pytest_internals.py uses; a new pytest that drops one fails here first."""
    import inspect

    from _pytest.config import findpaths

    assert hasattr(pytest.OptionGroup, "_addoption")
    params = set(inspect.signature(findpaths.determine_setup).parameters)
    assert {"inifile", "args", "rootdir_cmd_arg", "invocation_dir"} <= params
    for name in ("_checkversion", "_validate_plugins"):
        assert callable(getattr(pytest.Config, name)), name
    if hasattr(pytest.Config, "_configure_python_path"):  # pytest 8.1+
        assert callable(pytest.Config._unconfigure_python_path)
    else:  # pytest 8.0: a plugin adds pythonpath in pytest_load_initial_conftests, after restore_setup
        import _pytest.python_path

        assert callable(_pytest.python_path.pytest_load_initial_conftests)


def test_restore_setup__in_process_rootdir_ini_addopts_and_confcutdir(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Config attributes restore_setup sets, read back through pytest's public API."""
    project = pytester.path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "pytest.ini").write_text(
        "[pytest]\naddopts = --strict-markers\nmh_default_domain = app\npythonpath = src\n"
    )
    inventory = pytester.path / "elsewhere" / "hosts.ini"
    inventory.parent.mkdir()
    inventory.write_text("h1 ansible_connection=local\n")
    monkeypatch.chdir(project / "tests")
    config = pytester.parseconfig("-i", str(inventory))
    assert config.rootpath == project
    assert config.inipath == project / "pytest.ini"
    assert config.getini("mh_default_domain") == "app"
    assert config.option.strict_markers is True
    assert config.known_args_namespace.confcutdir == str(project)
    assert config.getoption("mh_inventory") == [str(inventory)]
    if hasattr(config, "_configure_python_path"):  # pytest 8.0 adds it later, in its own hook
        assert str(project / "src") in sys.path
