"""The instrument that measures the layer against pytest-mh's public API, and the page it generates.

``tests/compat_api/introspect.py`` describes a package's public API, ``check.py`` looks it up in another
package of the same name, ``page.py`` writes docs/compat-api.md from both. Here: the page is current,
the parameter rules, and a whole introspect-then-check run on two small packages that differ on purpose.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tests" / "compat_api"
sys.path.insert(0, str(TOOLS))

from check import compare_parameters  # noqa: E402 - a script directory, not a package


def _p(*specs: str) -> list[list[object]]:
    """``"a"`` positional-or-keyword, ``"a="`` with a default, ``"/a"`` positional-only, ``"*a"`` keyword-only,
    ``"*"``/``"**"`` the var parameters."""
    out: list[list[object]] = []
    for spec in specs:
        default = spec.endswith("=")
        name = spec.rstrip("=")
        if name == "*":
            out.append(["args", "var-positional", False])
        elif name == "**":
            out.append(["kwargs", "var-keyword", False])
        elif name.startswith("/"):
            out.append([name[1:], "positional-only", default])
        elif name.startswith("*"):
            out.append([name[1:], "keyword-only", default])
        else:
            out.append([name, "positional-or-keyword", default])
    return out


def test_docs_compat_api__the_page_is_what_the_generator_writes() -> None:
    result = subprocess.run(
        [sys.executable, str(TOOLS / "page.py"), "--stdout"], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert (ROOT / "docs" / "compat-api.md").read_text() == result.stdout, (
        "docs/compat-api.md is out of date with the layer: run .venv/bin/python tests/compat_api/page.py"
    )


@pytest.mark.parametrize(
    ("theirs", "ours"),
    [
        (_p("src", "dst="), _p("src", "dst=")),
        (_p("src", "dst="), _p("src", "dst=", "*mode=")),  # an extra optional parameter is fine
        (_p("src", "*mode="), _p("src", "mode=")),  # keyword-only there, also positional here: fine
        (_p("/x", "/y"), _p("a", "b")),  # positional-only: names do not matter
        (_p("a", "b"), _p("*", "**")),  # anything goes into *args, **kwargs
        (_p("a", "*"), _p("a", "*", "**")),  # more ways to call it than pytest-mh: fine
    ],
)
def test_compare_parameters__calls_written_for_pytest_mh_work(
    theirs: list[list[object]], ours: list[list[object]]
) -> None:
    assert compare_parameters(theirs, ours) == []


@pytest.mark.parametrize(
    ("theirs", "ours", "problem"),
    [
        (_p("srcpath", "dstpath"), _p("src", "dest"), "parameter 1 is 'src' here, 'srcpath' in pytest-mh"),
        (_p("a", "b="), _p("a", "b"), "'b' is required here, optional in pytest-mh"),
        (_p("a"), _p("a", "extra"), "requires 'extra', which pytest-mh does not have"),
        (_p("a", "lines="), _p("a", "*lines="), "'lines' is parameter 2 in pytest-mh, keyword-only here"),
        (_p("a", "*", "**"), _p("a"), "no *args"),
        (_p("*timeout="), _p(), "no keyword parameter 'timeout'"),
        (_p("a"), _p("/a"), "'a' is positional-only here, pytest-mh also takes it by keyword"),
        (_p("a", "b"), _p("b", "a"), "'a' is parameter 1 in pytest-mh, parameter 2 here"),
    ],
)
def test_compare_parameters__reports_what_a_pytest_mh_call_would_get_wrong(
    theirs: list[list[object]], ours: list[list[object]], problem: str
) -> None:
    assert problem in compare_parameters(theirs, ours)


REFERENCE = '''
"""the reference package"""
import enum
import logging

import pytest

__all__ = ["Tool", "Kind", "helper", "Log", "thing", "WinThing"]


class WinThing:
    def __init__(self, host):
        self.host = host

    def block(self, port):
        return port


@pytest.fixture(scope="session")
def thing():
    return 1


class Base:
    def __init__(self, host):
        self.host = host
        self._private = 1

    def shared(self, value, *, strict=False):
        return value


class Tool(Base):
    label: str

    def __init__(self, host, name="x"):
        super().__init__(host)
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        return None

    def __contains__(self, item):
        return False

    @property
    def ready(self):
        return True

    @classmethod
    def Create(cls, value):
        return cls(value)

    def copy(self, srcpath, dstpath):
        return None


class Kind(enum.Enum):
    One = 1
    Two = 2


def helper(a, b=None):
    return a


class Log(logging.Logger):
    pass
'''

LAYER = '''
"""the layer's package: gaps on purpose"""
import enum

import pytest


@pytest.fixture
def thing():
    return 1


class WinThing:
    def __init__(self, host):
        raise RuntimeError(f"{host.hostname}: WinThing needs a Windows host")


class Tool:
    label = "x"

    def __init__(self, host, name="x"):
        self.host = host

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return None

    def __contains__(self, item, other):
        return False

    def shared(self, value, *, strict=False):
        return value

    def ready(self):
        return True

    def Create(self, value):
        return value

    def copy(self, src, dst):
        return None


class Kind(enum.Enum):
    One = 1


def helper(a, b=None, *, c=1):
    return a


class Log:
    pass
'''


WINDOWS_ONLY = ("--windows-only", "fakemh:WinThing")


def test_check__finds_each_kind_of_gap_between_two_packages(tmp_path: Path) -> None:
    """introspect.py on one package, check.py on another of the same name: every difference is a gap line."""
    for side, source in (("reference", REFERENCE), ("layer", LAYER)):
        (tmp_path / side / "fakemh").mkdir(parents=True)
        (tmp_path / side / "fakemh" / "__init__.py").write_text(textwrap.dedent(source))
    introspected = subprocess.run(
        [sys.executable, str(TOOLS / "introspect.py"), "fakemh"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path / "reference",
        env={"PYTHONPATH": str(tmp_path / "reference"), "PATH": "/usr/bin:/bin"},
    )
    api = json.loads(introspected.stdout)
    tool = api["modules"]["fakemh"]["Tool"]
    assert tool["members"]["host"]["kind"] == "instance-attribute"
    assert tool["members"]["name"]["kind"] == "instance-attribute"
    assert "_private" not in tool["members"]
    assert tool["parameters"] == [["host", "positional-or-keyword", False], ["name", "positional-or-keyword", True]]
    (tmp_path / "api.json").write_text(introspected.stdout)
    checked = subprocess.run(
        [sys.executable, str(TOOLS / "check.py"), str(tmp_path / "api.json"), "--no-alias", *WINDOWS_ONLY],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path / "layer",
        env={"PYTHONPATH": str(tmp_path / "layer"), "PATH": "/usr/bin:/bin"},
    )
    assert checked.returncode == 1, checked.stderr
    gaps = set(checked.stdout.splitlines()[1:-1])
    assert gaps == {
        "signature fakemh:Tool.__contains__: cannot be called with the 1 argument(s) the interpreter passes",
        "missing fakemh:Tool.name",
        "signature fakemh:Tool.ready: a method here, a property in pytest-mh",
        "signature fakemh:Tool.Create: a method here, a classmethod in pytest-mh (called on the class)",
        "signature fakemh:Tool.copy: parameter 1 is 'src' here, 'srcpath' in pytest-mh; "
        "parameter 2 is 'dst' here, 'dstpath' in pytest-mh",
        "missing fakemh:Kind.Two",
        "signature fakemh:thing: scope 'function' here, 'session' in pytest-mh",
        # a name that needs Windows: it exists and says so, so what it lacks is listed, not counted
        "windows fakemh:WinThing.block",
        "windows fakemh:WinThing.host",
        "signature fakemh:Log: no parameter 'name'; no parameter 'level'",
        "base fakemh:Log: not a subclass of logging.Logger",
        "base fakemh:Log: not a subclass of logging.Filterer",
    }
    assert checked.stdout.splitlines()[-1] == "api: 6/6 names, 11/14 members, 7/11 signatures, 1/3 bases"
