"""The README's options table against the plugin as pytest sees it: every option has a row, every row an option.

Options are read from ``pytest --help`` in a fresh pytest process (the plugin's group and the ini
section), the way a user would find them; the documented ini defaults are compared with
``config.getini`` of an empty project.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCUMENTED = [README, *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "pytest_mh_ansible").rglob("*.py"))]


def _section(text: str, heading: str) -> str:
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"README.md has no '## {heading}' section"
    return match.group(1)


def readme_options() -> tuple[set[str], set[str]]:
    """The command-line options (first column) and ini options (second column) of the README's table."""
    options: set[str] = set()
    inis: set[str] = set()
    for row in _section(README.read_text(), "Options").splitlines():
        # Cells are split on "|" but not on "\|" (a pipe inside a cell, as in `error\|skip`).
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip()[1:-1])] if row.startswith("|") else []
        if len(cells) < 3 or all(c and set(c) <= set("-: ") for c in cells):  # not a row, or the |---| line
            continue
        options.update(re.findall(r"`(-\w|--[\w-]+)", cells[0]))
        options.update(re.findall(r", `?(--[\w-]+)", cells[0]))
        inis.update(re.findall(r"`(mh_\w+)`", cells[1]))
    return options, inis


def help_options(help_text: str) -> tuple[set[str], set[str]]:
    """The plugin's command-line options and its ini options (``mh_*``) in ``pytest --help`` output."""
    group = re.search(r"^pytest-mh-ansible:.*?:\n(.*?)(?=^\S|\Z)", help_text, re.MULTILINE | re.DOTALL)
    assert group, "pytest --help shows no pytest-mh-ansible option group"
    options = set()
    for line in group.group(1).splitlines():
        if re.match(r"^ {2}-", line):
            options.update(re.findall(r"(?:^|, )(-\w|--[\w-]+)", line.strip().split("  ")[0]))
    inis = set(re.findall(r"^ {2}(mh_\w+) \(", help_text, re.MULTILINE))
    return options, inis


def test_readme__parses_a_table_with_known_rows() -> None:
    options, inis = readme_options()
    assert {"-i", "--mh-inventory", "--mh-topology", "--mh-not-topology"} <= options
    assert {"mh_inventory", "mh_verify_paths", "mh_verify_exclude", "mh_default_domain"} <= inis


def test_readme__options_table_lists_every_option_and_no_other(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    assert result.ret == 0, result.stderr.str()
    cli, ini = help_options(result.stdout.str())
    assert {"-i", "--mh-inventory", "--mh-timeout", "--mh-show-hosts", "--mh-log-path"} <= cli  # the parse works
    documented_cli, documented_ini = readme_options()
    assert sorted(cli - documented_cli) == [], "options of the plugin without a row in README.md's options table"
    assert sorted(documented_cli - cli) == [], "rows of README.md's options table for options the plugin lacks"
    assert sorted(ini - documented_ini) == [], "ini options of the plugin without a row in README.md's options table"
    assert sorted(documented_ini - ini) == [], "ini options in README.md's options table that the plugin lacks"


# "`mh_x = a | b` (default ``a``)", "`mh_x` (default `a`)", "mh_x = b  # a (default) | b", "`a` (the default)".
_CLAIMS = (
    r"\b{name}\b[^\n]*?\(default:? ``?([\w./-]+)``?",
    r"^{name} = [^\n]*?\b(\w[\w-]*) \(default\)",
    r"\b{name}\b[^\n]*?`([\w-]+)` \((?:the )?default\)",
)


def test_docs__documented_ini_defaults_are_the_plugins(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    _, names = help_options(result.stdout.str())
    out = pytester.path / "defaults.json"
    pytester.makeconftest(f"""
        import json

        def pytest_configure(config):
            names = {sorted(names)!r}
            with open({str(out)!r}, "w") as f:
                json.dump({{n: config.getini(n) for n in names}}, f)
    """)
    assert pytester.runpytest_subprocess("--co", "-q").ret in (0, 5)
    defaults = json.loads(out.read_text())
    assert defaults["mh_crashes"] == "ignore"
    wrong = []
    claims = 0
    for path in DOCUMENTED:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for name, default in defaults.items():
                if not isinstance(default, str) or not default or name not in line:
                    continue
                for pattern in _CLAIMS:
                    for claimed in re.findall(pattern.format(name=name), line, re.MULTILINE):
                        claims += 1
                        if claimed != default:
                            where = path.relative_to(ROOT)
                            wrong.append(f"{where}:{number}: {name} default {claimed!r}, the plugin's is {default!r}")
    assert claims >= 4, "the patterns no longer find the documented defaults"
    assert not wrong, "documented ini defaults that are not the plugin's:\n" + "\n".join(wrong)
