"""The package's import structure: layers that only import downwards, and no import cycles.

Every import counts, including those inside functions (they run too, later); only imports under
``if TYPE_CHECKING:`` are left out, since they exist for the type checker alone. The layers, from
the bottom (docs/architecture.md draws them):

1. errors, values and small helpers every layer uses;
2. the connection and the Ansible boundary (and the lab, which talks only to the OS);
3. the journal, module calls and inverses;
4. hosts, roles, utilities, topology marks;
5. the session;
6. reporting;
7. the plugin, its hooks, the command line and the package facade;
8. the pytest-mh compatibility layer (``compat``), written against the public API above it.
"""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_mh_ansible"

LAYERS: list[tuple[int, tuple[str, ...]]] = [
    (
        1,
        (
            "errors",
            "topology",
            "playbook",
            "_private.secrets",
            "_private.local_files",
            "_private.teardown",
            "_private.options",
            "_private.ansible.executor_choice",
        ),
    ),
    (2, ("conn", "_private.ansible", "_private.ansible.*", "lab", "_private.lab", "_private.lab.*", "_private.mhc")),
    (3, ("rollback", "modules", "_private.rollback", "_private.rollback.*")),
    (4, ("host", "role", "utility", "utils", "utils.*", "controller", "backup", "multihost", "marks", "registry")),
    (5, ("_private.session", "_private.session.*")),
    (6, ("_private.reporting", "_private.reporting.*", "_private.stash", "_private.parallel", "_private.parallel.*")),
    (
        7,
        (
            "plugin",
            "hookspecs",
            "_private.cli",
            "_private.recover_cli",
            "_private.pytest_internals",
            "_private.pytest_mh_cli",
            "_private.alias",
            "_private.skips",
            "_private",
            "__init__",
        ),
    ),
    (8, ("compat", "compat.*")),
]


def _name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" and len(rel.parts) > 1 else rel.parts
    return ".".join(parts)


MODULES = {
    _name(path): path
    for path in sorted(PACKAGE.rglob("*.py"))
    if "_data" not in path.relative_to(PACKAGE).parts and path.name != "warm_agent.py"
}


def layer(module: str) -> int:
    for number, patterns in LAYERS:
        if any(fnmatch.fnmatchcase(module, pattern) for pattern in patterns):
            return number
    raise AssertionError(f"module {module!r} has no layer: add it to LAYERS in {__file__}")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(module: str) -> dict[str, int]:
    """The package modules ``module`` imports at run time, with the line of the first import."""
    path = MODULES[module]
    is_package = path.name == "__init__.py"
    found: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        # "from . import x" may name a submodule; "from .a import b" imports a (and maybe a.b).
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target and target != module:
            found.setdefault(target, line)

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for sub in child.orelse:
                    visit(sub)
                continue
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = module.split(".") if is_package else module.split(".")[:-1]
                    if module == "__init__":
                        base = []
                    base = base[: len(base) - (child.level - 1)] if child.level > 1 else base
                    absolute = ".".join([*base, *([child.module] if child.module else [])])
                elif (child.module or "").startswith("pytest_mh_ansible"):
                    absolute = (child.module or "").removeprefix("pytest_mh_ansible").lstrip(".") or "__init__"
                else:
                    continue
                for alias in child.names:
                    add(f"{absolute}.{alias.name}".lstrip("."), child.lineno)
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.startswith("pytest_mh_ansible."):
                        add(alias.name.removeprefix("pytest_mh_ansible."), child.lineno)
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return found


GRAPH = {module: runtime_imports(module) for module in MODULES}


def test_layers__every_module_has_a_layer() -> None:
    for module in MODULES:
        layer(module)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_layers__imports_only_go_down(module: str) -> None:
    upward = [
        f"{MODULES[module].relative_to(PACKAGE.parent)}:{line} imports {target} (layer {layer(target)})"
        for target, line in GRAPH[module].items()
        if layer(target) > layer(module)
    ]
    assert not upward, f"{module} (layer {layer(module)}) imports upward:\n  " + "\n  ".join(upward)


def test_layers__no_import_cycles() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH[node]:
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in GRAPH:
        if node not in index:
            connect(node)
    assert not cycles, "import cycles:\n  " + "\n  ".join(" <-> ".join(c) for c in cycles)
