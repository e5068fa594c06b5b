"""pytest-mh's public API as JSON: run it with a Python where the real pytest-mh is installed.

    bench/.venv-pytest-mh/bin/python tests/compat_api/introspect.py > tests/compat_api/pytest-mh-1.0.30.json

It walks every module of ``pytest_mh`` outside ``_private``, takes each module's ``__all__`` (or its
public attributes that pytest-mh defines), and describes each name: its kind, the parameters of a
callable (name, kind, whether it has a default) and, for a class, its public members (methods,
properties, class attributes, nested classes and enum members, inherited ones from pytest-mh's own
classes included), the instance attributes its ``__init__`` methods assign (``self.x = ...``, read
from the source with :mod:`ast`), the attributes it annotates, and its bases. ``check.py`` looks each
entry up in the layer. Only the standard library is used here, so that any virtualenv can run it.
"""

from __future__ import annotations

import ast
import enum
import importlib
import importlib.metadata
import inspect
import json
import pkgutil
import sys
import textwrap
import typing
from types import ModuleType
from typing import Any

# Dunder methods that are part of how a class is used (``with x:``, ``str(x)``, ``a == b``, ``x in y``).
PROTOCOL = (
    "__bool__",
    "__call__",
    "__contains__",
    "__delitem__",
    "__enter__",
    "__eq__",
    "__exit__",
    "__getitem__",
    "__iter__",
    "__len__",
    "__ne__",
    "__next__",
    "__setitem__",
    "__str__",
)
# Bases outside pytest-mh that say nothing about the API (every class has them, or they only type it).
NEUTRAL_BASES = {"builtins.object", "typing.Generic", "typing.Protocol", "abc.ABC"}
PARAM_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: "positional-only",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional-or-keyword",
    inspect.Parameter.VAR_POSITIONAL: "var-positional",
    inspect.Parameter.KEYWORD_ONLY: "keyword-only",
    inspect.Parameter.VAR_KEYWORD: "var-keyword",
}

__all__ = ["constructor_parameters", "describe_package", "init_attributes", "parameters", "public_modules"]


def public_modules(package: str) -> list[ModuleType]:
    """The package and every submodule whose dotted name has no part that starts with ``_``."""
    root = importlib.import_module(package)
    found = [root]
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        found.append(importlib.import_module(info.name))
    return sorted(found, key=lambda m: m.__name__)


def _ours(obj: Any, package: str) -> bool:
    return str(getattr(obj, "__module__", "") or "").split(".")[0] == package


def public_names(module: ModuleType, package: str) -> list[str]:
    """``__all__``, else the public attributes that the package defines (imports of other libraries left out)."""
    declared = getattr(module, "__all__", None)
    if declared is not None:
        return sorted(declared)
    return sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, ModuleType) and _ours(value, package)
    )


def parameters(func: Any, drop_first: bool = False) -> list[list[Any]] | None:
    """``[[name, kind, has_default], ...]`` of a callable, or None where Python cannot tell."""
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


def _is_fixture(obj: Any) -> bool:
    # pytest >= 8.4 wraps a fixture function in FixtureFunctionDefinition; older pytest marks the function.
    return type(obj).__name__ == "FixtureFunctionDefinition" or hasattr(obj, "_pytestfixturefunction")


def _fixture_scope(obj: Any) -> str | None:
    marker = getattr(obj, "_fixture_function_marker", None) or getattr(obj, "_pytestfixturefunction", None)
    scope = getattr(marker, "scope", None)
    return scope if isinstance(scope, str) else None


def init_attributes(cls: type) -> list[str]:
    """Public names that ``__init__`` of ``cls`` itself assigns on ``self`` (read from its source)."""
    init = vars(cls).get("__init__")
    if init is None or not inspect.isfunction(init):
        return []
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
    except (OSError, TypeError, SyntaxError):
        return []
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for target in targets:
            for leaf in ast.walk(target):
                if (
                    isinstance(leaf, ast.Attribute)
                    and isinstance(leaf.value, ast.Name)
                    and leaf.value.id == "self"
                    and not leaf.attr.startswith("_")
                ):
                    found.add(leaf.attr)
    return sorted(found)


def _member_kind(raw: Any) -> str:
    if isinstance(raw, staticmethod):
        return "staticmethod"
    if isinstance(raw, classmethod):
        return "classmethod"
    if isinstance(raw, property):
        return "property"
    if inspect.isclass(raw):
        return "class"
    if isinstance(raw, enum.Enum):
        return "enum-member"
    if inspect.isfunction(raw) or inspect.ismethoddescriptor(raw):
        return "method"
    return "attribute"


def member_parameters(raw: Any) -> list[list[Any]] | None:
    """The parameters a caller passes to a member found with ``inspect.getattr_static`` (no self/cls)."""
    if isinstance(raw, staticmethod):
        return parameters(raw.__func__)
    if isinstance(raw, classmethod):
        return parameters(raw.__func__, drop_first=True)
    if inspect.isfunction(raw):
        return parameters(raw, drop_first=True)
    return None


def constructor_parameters(cls: type) -> list[list[Any]] | None:
    """What ``cls(...)`` takes: its ``__init__`` (a metaclass's ``__call__(*args, **kwargs)`` would hide it)."""
    if cls.__init__ is not object.__init__:
        return parameters(cls.__init__, drop_first=True)
    return parameters(cls)


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def describe_class(cls: type, package: str, public: dict[int, str]) -> dict[str, Any]:
    """Members, instance attributes, bases and constructor parameters of a class of the package."""
    own = [klass for klass in cls.__mro__ if _ours(klass, package)]
    members: dict[str, dict[str, Any]] = {}
    for klass in reversed(own):  # a subclass's definition replaces its base's
        for name, raw in vars(klass).items():
            if name.startswith("_") and name not in PROTOCOL:
                continue
            entry: dict[str, Any] = {"kind": _member_kind(raw), "defined_in": _qualified(klass)}
            params = member_parameters(raw)
            if params is not None:
                entry["parameters"] = params
            if entry["kind"] == "class" and _ours(raw, package) and raw.__qualname__.startswith(klass.__qualname__):
                entry["members"] = describe_class(raw, package, public)["members"]
            members[name] = entry
        annotations = vars(klass).get("__annotations__", {})
        for name in [*annotations, *init_attributes(klass)]:
            if not name.startswith("_") and name not in members:
                members[name] = {"kind": "instance-attribute", "defined_in": _qualified(klass)}
    if issubclass(cls, enum.Enum):
        for name in cls.__members__:
            members.setdefault(name, {"kind": "enum-member", "defined_in": _qualified(cls)})
    bases: list[str] = []
    for klass in cls.__mro__[1:]:
        if id(klass) in public:
            bases.append(public[id(klass)])
        elif not _ours(klass, package) and _qualified(klass) not in NEUTRAL_BASES:
            bases.append(_qualified(klass))
    described: dict[str, Any] = {"kind": "class", "bases": bases, "members": dict(sorted(members.items()))}
    if issubclass(cls, enum.Enum):
        described["kind"] = "enum"
    else:
        params = constructor_parameters(cls)
        if params is not None:
            described["parameters"] = params
    return described


def describe(obj: Any, package: str, public: dict[int, str]) -> dict[str, Any]:
    if _is_fixture(obj):
        return {"kind": "fixture", "scope": _fixture_scope(obj)}
    if inspect.isclass(obj):
        return describe_class(obj, package, public)
    if isinstance(obj, typing.TypeVar):
        return {"kind": "typevar"}
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return {"kind": "function", "parameters": parameters(obj)}
    if isinstance(obj, ModuleType):
        return {"kind": "module"}
    return {"kind": "alias" if typing.get_origin(obj) is not None else "value", "type": type(obj).__name__}


def describe_package(package: str = "pytest_mh") -> dict[str, Any]:
    """The whole public API: ``{"modules": {"pytest_mh.conn": {"Process": {...}, ...}, ...}}``."""
    modules = public_modules(package)
    names = {m.__name__: public_names(m, package) for m in modules}
    # Where each class is public, so that a base is named as users import it (the first module listing it).
    public: dict[int, str] = {}
    for module in modules:
        for name in names[module.__name__]:
            obj = getattr(module, name, None)
            if inspect.isclass(obj):
                public.setdefault(id(obj), f"{module.__name__}:{name}")
    api: dict[str, Any] = {}
    for module in modules:
        entries: dict[str, Any] = {}
        for name in names[module.__name__]:
            if not hasattr(module, name):
                entries[name] = {"kind": "broken"}  # listed in __all__ but not defined
                continue
            entries[name] = describe(getattr(module, name), package, public)
        api[module.__name__] = entries
    try:
        version = importlib.metadata.version(package.replace("_", "-"))
    except importlib.metadata.PackageNotFoundError:
        version = None
    return {"package": package, "version": version, "modules": api}


def main() -> int:
    package = sys.argv[1] if len(sys.argv) > 1 else "pytest_mh"
    json.dump(describe_package(package), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
