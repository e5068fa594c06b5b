"""Looks pytest-mh's public API (the JSON of ``introspect.py``) up in the layer that serves ``pytest_mh``.

    python tests/compat_api/check.py tests/compat_api/pytest-mh-1.0.30.json [--gaps FILE]

Run it with the Python of a virtualenv that has pytest-mh-ansible and not pytest-mh: it installs the
layer's import hook (``pytest_mh_ansible.compat._alias``), imports each module as ``pytest_mh...`` and
prints one line per gap, then the counts (``api: 78/78 names, ...``); the exit code is 1 if anything
is missing. What each check means:

* **names**: the module has the name, of the same kind (a class, an enum, a fixture of the same scope,
  a type variable, a function).
* **members**: the layer's class has each public member of pytest-mh's class (methods, properties,
  class attributes, enum members, nested classes and their members, ``__enter__``/``__str__``-like
  protocol methods that pytest-mh defines). An instance attribute that pytest-mh's ``__init__``
  assigns counts as present when the layer's class has it as a class attribute or property, annotates
  it on a class of its MRO, lists it in ``__slots__``, or assigns ``self.<name>`` in an ``__init__`` of its
  MRO (read from the source with :mod:`ast`, as ``introspect.py`` reads pytest-mh's). Nothing is
  instantiated: most classes need hosts, and the source is what both sides are read from.
* **signatures**: each callable (function, constructor, method) accepts every way of calling it that
  pytest-mh's accepts: the same positional parameters by name and position, every keyword parameter,
  ``*args``/``**kwargs`` where pytest-mh has them, optional where pytest-mh's is optional, and no extra
  required parameter. A member used differently is a ``signature`` line too: it counts against the
  signatures where pytest-mh's is callable (an instance method where it has a classmethod), against
  the members where it is not (a method where pytest-mh has a property).
* **bases**: the layer's class is a subclass of the layer's class for each public pytest-mh base
  (``SSHClient`` of ``Connection``) and of the same outside base (``logging.Logger``, ``Exception``).

The only exception: :data:`WINDOWS_ONLY` names, which must exist and raise an error that names Windows
when made; their members are then reported as ``windows`` and not counted as missing.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import enum
import importlib
import inspect
import json
import sys
import textwrap
import typing
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

ALIAS = "pytest_mh"
WINDOWS_ONLY = frozenset({"pytest_mh.utils.firewall:WindowsFirewall"})
PARAM_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: "positional-only",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional-or-keyword",
    inspect.Parameter.VAR_POSITIONAL: "var-positional",
    inspect.Parameter.KEYWORD_ONLY: "keyword-only",
    inspect.Parameter.VAR_KEYWORD: "var-keyword",
}
POSITIONAL = ("positional-only", "positional-or-keyword")
CATEGORIES = ("names", "members", "signatures", "bases")

__all__ = ["CATEGORIES", "Gap", "Report", "check", "compare_parameters", "main"]


@dataclasses.dataclass(frozen=True)
class Gap:
    """One difference: ``category`` (names, members, signatures, bases or windows), where, and what."""

    category: str
    where: str
    detail: str = ""

    def line(self) -> str:
        label = {"names": "missing", "members": "missing", "signatures": "signature", "bases": "base"}
        return f"{label.get(self.category, self.category)} {self.where}" + (f": {self.detail}" if self.detail else "")


@dataclasses.dataclass
class Report:
    """Counts per category (checked, passed) and every gap, in the order of the API."""

    checked: dict[str, int] = dataclasses.field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    passed: dict[str, int] = dataclasses.field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    gaps: list[Gap] = dataclasses.field(default_factory=list)
    # "module:Name" or "module:Name.member" -> "ok" | "missing" | "signature" | "windows"
    status: dict[str, str] = dataclasses.field(default_factory=dict)

    def count(self, category: str, ok: bool, gap: Gap | None = None) -> None:
        self.checked[category] += 1
        if ok:
            self.passed[category] += 1
        elif gap is not None:
            self.gaps.append(gap)

    def summary(self) -> str:
        return "api: " + ", ".join(f"{self.passed[c]}/{self.checked[c]} {c}" for c in CATEGORIES)

    @property
    def missing(self) -> int:
        return sum(self.checked[c] - self.passed[c] for c in CATEGORIES)


def _parameters(func: Any, drop_first: bool = False) -> list[list[Any]] | None:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    if (
        drop_first
        and params
        and params[0].kind
        in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        )
    ):
        params = params[1:]
    return [[p.name, PARAM_KINDS[p.kind], p.default is not inspect.Parameter.empty] for p in params]


def compare_parameters(theirs: list[list[Any]], ours: list[list[Any]]) -> list[str]:
    """What a call that pytest-mh's parameters accept would get wrong with ours (empty: nothing)."""
    problems: list[str] = []
    t_pos = [p for p in theirs if p[1] in POSITIONAL]
    o_pos = [p for p in ours if p[1] in POSITIONAL]
    o_named = {p[0]: p for p in ours if p[1] != "positional-only"}
    o_var_pos = any(p[1] == "var-positional" for p in ours)
    o_var_kw = any(p[1] == "var-keyword" for p in ours)
    matched: set[str] = set()
    for index, (name, kind, default) in enumerate(t_pos):
        other = o_pos[index] if index < len(o_pos) else None
        if kind == "positional-only":
            if other is not None:
                matched.add(other[0])
                if default and not other[2]:
                    problems.append(f"positional parameter {index + 1} is required here, optional in pytest-mh")
            elif not o_var_pos:
                problems.append(f"takes no positional parameter {index + 1} ({name!r} in pytest-mh)")
            continue
        if other is not None and other[0] == name and other[1] == "positional-or-keyword":
            matched.add(name)
            if default and not other[2]:
                problems.append(f"{name!r} is required here, optional in pytest-mh")
        elif other is not None and other[0] == name:
            matched.add(name)
            problems.append(f"{name!r} is positional-only here, pytest-mh also takes it by keyword")
        elif name in o_named:
            matched.add(name)
            where = [p[0] for p in o_pos].index(name) + 1 if o_named[name][1] in POSITIONAL else None
            problems.append(
                f"{name!r} is parameter {index + 1} in pytest-mh, "
                + (f"parameter {where} here" if where else f"{o_named[name][1]} here")
            )
        elif o_var_pos and o_var_kw:
            continue
        elif other is not None:
            matched.add(other[0])
            problems.append(f"parameter {index + 1} is {other[0]!r} here, {name!r} in pytest-mh")
        else:
            problems.append(f"no parameter {name!r}")
    for name, kind, default in theirs:
        if kind == "keyword-only":
            other = o_named.get(name)
            if other is None:
                if not o_var_kw:
                    problems.append(f"no keyword parameter {name!r}")
                continue
            matched.add(name)
            if default and not other[2]:
                problems.append(f"{name!r} is required here, optional in pytest-mh")
        elif kind == "var-positional" and not o_var_pos:
            problems.append(f"no *{name}")
        elif kind == "var-keyword" and not o_var_kw:
            problems.append(f"no **{name}")
    for name, kind, default in ours:
        if kind in (*POSITIONAL, "keyword-only") and not default and name not in matched:
            problems.append(f"requires {name!r}, which pytest-mh does not have")
    return problems


def _is_fixture(obj: Any) -> bool:
    return type(obj).__name__ == "FixtureFunctionDefinition" or hasattr(obj, "_pytestfixturefunction")


def _fixture_scope(obj: Any) -> str | None:
    marker = getattr(obj, "_fixture_function_marker", None) or getattr(obj, "_pytestfixturefunction", None)
    scope = getattr(marker, "scope", None)
    return scope if isinstance(scope, str) else None


def _static(cls: type, name: str) -> Any:
    try:
        return inspect.getattr_static(cls, name)
    except AttributeError:
        return None


def _init_assigns(cls: type, name: str) -> bool:
    """Whether an ``__init__`` in the MRO of ``cls`` assigns ``self.<name>`` (read from its source)."""
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if init is None or not inspect.isfunction(init):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and node.attr == name
            ):
                return True
    return False


def _has_instance_attribute(cls: type, name: str) -> bool:
    for klass in cls.__mro__:
        if name in vars(klass).get("__annotations__", {}) or name in (getattr(klass, "__slots__", ()) or ()):
            return True
        if dataclasses.is_dataclass(klass) and name in {f.name for f in dataclasses.fields(klass)}:
            return True
    return _init_assigns(cls, name)


def _layer_kind(raw: Any) -> str:
    if isinstance(raw, staticmethod):
        return "staticmethod"
    if isinstance(raw, classmethod):
        return "classmethod"
    if isinstance(raw, property) or type(raw).__name__ in ("cached_property", "getset_descriptor"):
        return "property"
    if inspect.isclass(raw):
        return "class"
    if isinstance(raw, enum.Enum):
        return "enum-member"
    if inspect.isfunction(raw) or inspect.ismethoddescriptor(raw) or callable(raw):
        return "method"
    return "attribute"


def _layer_member_parameters(raw: Any) -> list[list[Any]] | None:
    if isinstance(raw, staticmethod):
        return _parameters(raw.__func__)
    if isinstance(raw, classmethod):
        return _parameters(raw.__func__, drop_first=True)
    if inspect.isfunction(raw) or inspect.ismethoddescriptor(raw):
        return _parameters(raw, drop_first=True)
    if callable(raw) and not inspect.isclass(raw):
        return _parameters(raw)
    return None


def _constructor_parameters(cls: type) -> list[list[Any]] | None:
    """What ``cls(...)`` takes, read as ``introspect.py`` reads pytest-mh's: from ``__init__`` where a class has one."""
    if cls.__init__ is not object.__init__:
        return _parameters(cls.__init__, drop_first=True)
    return _parameters(cls)


# How many positional arguments the interpreter passes to each protocol method (``__call__`` is called by
# users, with any arguments: its parameters are compared as any method's).
PROTOCOL_ARITY = {
    "__bool__": 0,
    "__contains__": 1,
    "__delitem__": 1,
    "__enter__": 0,
    "__eq__": 1,
    "__exit__": 3,
    "__getitem__": 1,
    "__iter__": 0,
    "__len__": 0,
    "__ne__": 1,
    "__next__": 0,
    "__setitem__": 2,
    "__str__": 0,
}


def _protocol_problems(name: str, ours: list[list[Any]]) -> list[str]:
    """What keeps the interpreter's call of a protocol method (``with``, ``in``, ``==``) from working: not names."""
    arity = PROTOCOL_ARITY[name]
    required = sum(1 for p in ours if p[1] in POSITIONAL and not p[2])
    capacity = float("inf") if any(p[1] == "var-positional" for p in ours) else sum(p[1] in POSITIONAL for p in ours)
    problems = [f"requires keyword {p[0]!r}" for p in ours if p[1] == "keyword-only" and not p[2]]
    if not required <= arity <= capacity:
        problems.append(f"cannot be called with the {arity} argument(s) the interpreter passes")
    return problems


def _protocol_missing(cls: type, name: str) -> bool:
    """A dunder counts only where a class other than ``object`` (or Enum's machinery) defines it."""
    own = next((k for k in cls.__mro__ if name in vars(k)), None)
    if name == "__ne__" and (own is None or own is object):
        return _protocol_missing(cls, "__eq__")
    return own is None or own is object


def _kind_problem(theirs: str, ours: str) -> str | None:
    if theirs in ("method",) and ours not in ("method", "staticmethod", "classmethod", "class"):
        return f"a {ours} here, a method in pytest-mh"
    if theirs in ("classmethod", "staticmethod") and ours not in ("staticmethod", "classmethod", "class"):
        return f"a {ours} here, a {theirs} in pytest-mh (called on the class)"
    if theirs in ("property", "attribute", "instance-attribute") and ours in ("method", "staticmethod", "classmethod"):
        return f"a {ours} here, a {theirs} in pytest-mh"
    if theirs == "class" and ours != "class":
        return f"a {ours} here, a class in pytest-mh"
    return None


class _Checker:
    def __init__(self, api: dict[str, Any], windows_only: frozenset[str]) -> None:
        self.api = api
        self.windows_only = windows_only
        self.report = Report()

    def resolve(self, public: str) -> Any:
        module_name, _, name = public.partition(":")
        try:
            return getattr(importlib.import_module(module_name), name, None)
        except ImportError:
            return None

    def run(self) -> Report:
        for module_name, entries in self.api["modules"].items():
            try:
                module: ModuleType | None = importlib.import_module(module_name)
            except Exception as err:  # a layer module that fails to import is a gap, not a crash
                module = None
                self.report.gaps.append(Gap("module", module_name, f"does not import: {type(err).__name__}: {err}"))
            for name, entry in entries.items():
                self.name(module_name, module, name, entry)
        return self.report

    def _all_missing(self, where: str, entry: dict[str, Any], windows: bool = False) -> None:
        """Everything under a missing name or member is missing too (or allowed, for Windows)."""
        category_status = "windows" if windows else "missing"
        for member, sub in entry.get("members", {}).items():
            path = f"{where}.{member}"
            self.report.status[path] = category_status
            if windows:
                self.report.gaps.append(Gap("windows", path))
                self.report.count("members", True)
            else:
                self.report.count("members", False)
            if "parameters" in sub:
                self.report.count("signatures", windows)
            self._all_missing(path, sub, windows)

    def name(self, module_name: str, module: ModuleType | None, name: str, entry: dict[str, Any]) -> None:
        where = f"{module_name}:{name}"
        obj = getattr(module, name, None) if module is not None else None
        present = module is not None and hasattr(module, name)
        self.report.count("names", present, Gap("names", where))
        if not present:
            self.report.status[where] = "missing"
            if "parameters" in entry:
                self.report.count("signatures", False)
            for _base in entry.get("bases", ()):
                self.report.count("bases", False)
            self._all_missing(where, entry)
            return
        self.report.status[where] = "ok"
        kind = entry["kind"]
        problem: str | None = None
        if kind in ("class", "enum") and not inspect.isclass(obj):
            problem = f"not a class here ({type(obj).__name__})"
        elif kind == "enum" and not issubclass(obj, enum.Enum):
            problem = "not an Enum here"
        elif kind == "fixture" and not _is_fixture(obj):
            problem = "not a pytest fixture here"
        elif kind == "fixture" and entry.get("scope") != _fixture_scope(obj):
            problem = f"scope {_fixture_scope(obj)!r} here, {entry.get('scope')!r} in pytest-mh"
        elif kind == "typevar" and not isinstance(obj, typing.TypeVar):
            problem = "not a TypeVar here"
        elif kind == "function" and not callable(obj):
            problem = "not callable here"
        if problem is not None:
            self.report.gaps.append(Gap("signatures", where, problem))
            self.report.status[where] = "signature"
        windows = where in self.windows_only and inspect.isclass(obj) and self._raises_for_windows(obj, entry)
        if "parameters" in entry:
            ours = None
            if problem is None:
                ours = _constructor_parameters(obj) if inspect.isclass(obj) else _parameters(obj)
            self.signature(where, entry["parameters"], ours, problem)
        if inspect.isclass(obj) and kind in ("class", "enum"):
            for base in entry.get("bases", ()):
                self.base(where, obj, base, windows)
            self.members(where, obj, entry.get("members", {}), windows)
        elif entry.get("members"):
            self._all_missing(where, entry)

    def _raises_for_windows(self, cls: type, entry: dict[str, Any]) -> bool:
        required = [p for p in entry.get("parameters") or [] if p[1] in POSITIONAL and not p[2]]
        stand_in = SimpleNamespace(hostname="windows-host", name="windows-host", role="client")
        try:
            cls(*[stand_in] * len(required))
        except Exception as err:  # any error will do, as long as it says why
            return "windows" in str(err).lower()
        return False

    def signature(
        self, where: str, theirs: list[list[Any]] | None, ours: list[list[Any]] | None, problem: str | None = None
    ) -> None:
        if theirs is None:
            return
        if problem is not None:
            self.report.count("signatures", False)
            return
        member = where.rpartition(".")[2]
        if ours is None:
            problems: list[str] = []
        elif member in PROTOCOL_ARITY:
            problems = _protocol_problems(member, ours)
        else:
            problems = compare_parameters(theirs, ours)
        if problems:
            self.report.status[where] = "signature"
        self.report.count("signatures", not problems, Gap("signatures", where, "; ".join(problems)))

    def base(self, where: str, cls: type, base: str, windows: bool) -> None:
        if ":" in base:
            expected = self.resolve(base)
            label = base
        else:
            module_name, _, qualname = base.rpartition(".")
            try:
                expected = getattr(importlib.import_module(module_name), qualname, None)
            except ImportError:
                expected = None
            label = base
        ok = inspect.isclass(expected) and issubclass(cls, expected)
        gap = Gap("windows" if windows else "bases", where, f"not a subclass of {label}")
        if windows and not ok:  # listed, not counted
            self.report.gaps.append(gap)
        self.report.count("bases", ok or windows, gap)

    def members(self, where: str, cls: type, members: dict[str, Any], windows: bool) -> None:
        for member, entry in members.items():
            path = f"{where}.{member}"
            theirs = entry["kind"]
            raw = _static(cls, member)
            if member.startswith("__"):
                present = not _protocol_missing(cls, member)
            elif raw is not None or hasattr(cls, member):
                present = True
            else:
                present = theirs in ("instance-attribute", "attribute", "property") and _has_instance_attribute(
                    cls, member
                )
            if not present:
                self.report.status[path] = "windows" if windows else "missing"
                if windows:  # listed, not counted
                    self.report.gaps.append(Gap("windows", path))
                self.report.count("members", windows, Gap("members", path))
                if "parameters" in entry:
                    self.report.count("signatures", windows)
                self._all_missing(path, entry, windows)
                continue
            ours = _layer_kind(raw) if raw is not None else "instance-attribute"
            problem = _kind_problem(theirs, ours)
            self.report.status[path] = "ok" if problem is None else "signature"
            before = len(self.report.gaps)
            if "parameters" in entry:
                self.report.count("members", True)
                ours_params = _layer_member_parameters(raw) if problem is None else None
                self.signature(path, entry["parameters"], ours_params, problem)
                failed = problem is not None or len(self.report.gaps) > before
                if problem is not None:
                    self.report.gaps.append(Gap("signatures", path, problem))
                if windows and failed:  # listed, not counted
                    self.report.passed["signatures"] += 1
            else:
                # an attribute used the wrong way (a method where pytest-mh has a property) is not there for a caller
                self.report.count("members", problem is None or windows)
                if problem is not None:
                    self.report.gaps.append(Gap("signatures", path, problem))
            if windows and len(self.report.gaps) > before:
                self.report.gaps[before:] = [Gap("windows", g.where, g.detail) for g in self.report.gaps[before:]]
                self.report.status[path] = "windows"
            if entry.get("members") and inspect.isclass(getattr(cls, member, None)):
                self.members(path, getattr(cls, member), entry["members"], windows)
            elif entry.get("members"):
                self._all_missing(path, entry, windows)


def check(api: dict[str, Any], install_alias: bool = True, windows_only: frozenset[str] = WINDOWS_ONLY) -> Report:
    """Every entry of ``api`` looked up in the layer (served as ``pytest_mh`` through its import hook)."""
    if install_alias:
        from pytest_mh_ansible.compat import _alias

        _alias.install()
    return _Checker(api, windows_only).run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("api", type=Path, help="the JSON written by introspect.py")
    parser.add_argument("--gaps", type=Path, help="also write the gap lines and the counts to this file")
    parser.add_argument("--json", type=Path, help="also write the counts and the status of each entry as JSON")
    parser.add_argument(
        "--no-alias", action="store_true", help="import the API's modules as they are named (no pytest_mh import hook)"
    )
    parser.add_argument(
        "--windows-only",
        action="append",
        metavar="MODULE:NAME",
        help=f"a class that needs Windows (default: {', '.join(sorted(WINDOWS_ONLY))})",
    )
    args = parser.parse_args(argv)
    api = json.loads(args.api.read_text())
    windows_only = frozenset(args.windows_only) if args.windows_only else WINDOWS_ONLY
    try:
        report = check(api, install_alias=not args.no_alias, windows_only=windows_only)
    except Exception as err:  # the layer itself does not import: that is the gap
        text = f"the layer does not import: {type(err).__name__}: {err}\n"
        sys.stdout.write(text)
        if args.gaps is not None:
            args.gaps.write_text(text)
        return 2
    lines = [gap.line() for gap in report.gaps]
    header = f"# pytest-mh {api.get('version')} public API looked up in the layer (tests/compat_api/check.py)"
    text = "\n".join([header, *lines, report.summary()]) + "\n"
    sys.stdout.write(text)
    if args.gaps is not None:
        args.gaps.write_text(text)
    if args.json is not None:
        data = {
            "checked": report.checked,
            "passed": report.passed,
            "gaps": [dataclasses.asdict(g) for g in report.gaps],
            "status": report.status,
        }
        args.json.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return 1 if report.missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
