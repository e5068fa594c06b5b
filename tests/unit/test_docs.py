"""The documentation against the code: links resolve, named objects and files exist, every public name is documented.

Docs drift silently: a page links a file that was renamed, a docstring names a method that was
removed, a comment cites notes that never were in the repository. These tests read the pages
(``docs/**/*.md``, ``README.md``) and the package's sources and fail on each such reference.
"""

from __future__ import annotations

import fnmatch
import importlib
import importlib.util
import inspect
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import pytest_mh_ansible

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in [ROOT / "README.md", *DOCS.rglob("*.md")] if "_build" not in p.relative_to(ROOT).parts)
SOURCES = sorted(p for p in (ROOT / "pytest_mh_ansible").rglob("*.py") if "_data" not in p.parts)

# [text](target) outside code; images too. Autolinks and reference-style links are not used here.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]+`")


def _public_api() -> ModuleType:
    spec = importlib.util.spec_from_file_location("public_api", DOCS / "_ext" / "public_api.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _prose(text: str) -> str:
    """The page without its code blocks and inline code, where ``[x](y)`` is not a link."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub and MyST make it: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    anchors = {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*$", text, re.MULTILINE)}
    anchors |= set(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    return anchors


def _links() -> list[tuple[Path, str]]:
    return [(page, m.group(1)) for page in PAGES for m in LINK.finditer(_prose(page.read_text()))]


@pytest.mark.parametrize(
    ("page", "target"), _links(), ids=lambda v: v.relative_to(ROOT).as_posix() if isinstance(v, Path) else v
)
def test_docs__relative_link_resolves(page: Path, target: str) -> None:
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):
        return  # http:, https:, mailto: - not checked offline
    path_part, _, anchor = target.partition("#")
    resolved = (page.parent / path_part).resolve() if path_part else page
    assert resolved.exists(), f"{page.relative_to(ROOT)}: link {target!r} points at {resolved}, which does not exist"
    assert resolved.is_relative_to(ROOT), f"{page.relative_to(ROOT)}: link {target!r} leaves the repository"
    if anchor:
        assert resolved.suffix == ".md", f"{page.relative_to(ROOT)}: link {target!r}: an anchor into a non-page"
        assert anchor in _anchors(resolved), (
            f"{page.relative_to(ROOT)}: link {target!r}: no heading or anchor {anchor!r} in {path_part or 'the page'}"
        )


def _resolve(dotted: str) -> Any:
    """The object named by a dotted path: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)  # AttributeError: the name does not exist
        return obj
    raise ImportError(dotted)


# `pytest_mh_ansible.X.y` in backticks (Markdown or reST) and the targets of reST roles.
NAMED = re.compile(r"(?::\w+:`~?|``?)(pytest_mh_ansible(?:\.\w+)+)(?:\(\))?`")
ROLE = re.compile(r":(?:func|class|meth|attr|exc|mod|data|obj):`~?([\w.]+)`")


# Logger names look like module paths (`pytest_mh_ansible.artifacts`) and are documented as such.
LOGGERS = {m for path in SOURCES for m in re.findall(r"getLogger\(\"([\w.]+)\"\)", path.read_text())}


def _names() -> list[tuple[Path, str]]:
    found: set[tuple[Path, str]] = set()
    for path in [*PAGES, *SOURCES]:
        text = path.read_text()
        found.update((path, m.group(1)) for m in NAMED.finditer(text) if m.group(1) not in LOGGERS)
        found.update((path, m.group(1)) for m in ROLE.finditer(text) if m.group(1).startswith("pytest_mh_ansible."))
    return sorted(found)


@pytest.mark.parametrize(
    ("path", "name"), _names(), ids=lambda v: v.relative_to(ROOT).as_posix() if isinstance(v, Path) else v
)
def test_docs__named_object_exists(path: Path, name: str) -> None:
    try:
        _resolve(name)
    except (ImportError, AttributeError) as err:
        pytest.fail(f"{path.relative_to(ROOT)}: names {name!r}, which does not exist ({err})")


def _sets_attribute(cls: type, name: str) -> bool:
    """An instance attribute: ``self.name = ...`` somewhere in the class (or a base class) of the package."""
    for klass in cls.__mro__:
        if klass.__module__.startswith("pytest_mh_ansible") and re.search(
            rf"\bself\.{name}\s*(?::[^=]+)?=", inspect.getsource(klass)
        ):
            return True
    return False


def test_docs__unqualified_roles_name_methods_that_exist() -> None:
    """``:meth:`check``` in a class's docstring names a member of that class (or of a public name)."""
    missing = []
    public = {name: getattr(pytest_mh_ansible, name) for name in pytest_mh_ansible.__all__}
    for name, obj in public.items():
        for member_name, member in [(name, obj), *vars(obj).items()] if isinstance(obj, type) else [(name, obj)]:
            doc = getattr(member, "__doc__", None) or ""
            for target in re.findall(r":(?:meth|attr):`~?(\w+)`", doc):
                if not (isinstance(obj, type) and (hasattr(obj, target) or _sets_attribute(obj, target))):
                    missing.append(f"{name}.{member_name}: :meth:/:attr: {target!r}")
    assert not missing, "docstrings name members that do not exist:\n" + "\n".join(missing)


def _utilities() -> dict[str, type]:
    """The utilities every host has, by attribute name: ``{"fs": FileSystem, "firewall": Firewall, ...}``."""
    found = {}
    for name, member in vars(pytest_mh_ansible.MultihostHost).items():
        annotation = getattr(getattr(member, "func", None), "__annotations__", {}).get("return")
        if isinstance(annotation, str) and annotation in pytest_mh_ansible.__all__:
            cls = getattr(pytest_mh_ansible, annotation)
            if issubclass(cls, pytest_mh_ansible.MultihostUtility):
                found[name] = cls
    return found


def test_docs__utility_calls_in_docs_exist() -> None:
    """``host.firewall.block_from(...)`` in a page or docstring names a method the utility has."""
    utilities = _utilities()
    assert {"fs", "svc", "users", "firewall"} <= set(utilities)
    call = re.compile(r"\b(?:host|role|server\d*|client\d*|\w+_host)\.(" + "|".join(utilities) + r")\.(\w+)")
    missing = []
    # The compatibility layer's docstrings show pytest-mh's utilities (client.svc is its SystemdServices there).
    compat = ROOT / "pytest_mh_ansible" / "compat"
    for path in [p for p in [*PAGES, *SOURCES] if compat not in p.parents]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for utility, attr in call.findall(line):
                cls = utilities[utility]
                if not (hasattr(cls, attr) or _sets_attribute(cls, attr)):
                    missing.append(
                        f"{path.relative_to(ROOT)}:{number}: {utility}.{attr} ({cls.__name__} has no {attr!r})"
                    )
    assert not missing, "utility members that do not exist:\n" + "\n".join(missing)


# A path in backticks that starts at a top-level entry of the repository: `bench/compare.py`.
TOP = sorted(p.name for p in ROOT.iterdir() if not p.name.startswith(".") or p.name == ".ci")
REPO_PATH = re.compile(r"`((?:" + "|".join(re.escape(t) for t in TOP) + r")/[\w./-]*)`")
# A file name ending in .md, anywhere in prose, code or comments: README.md, LAB.md.
MD_FILE = re.compile(r"(?<![\w/.-])([\w-]+\.md)\b")


GITIGNORED = [
    line.strip().strip("/")
    for line in (ROOT / ".gitignore").read_text().splitlines()
    if line.strip() and line[0] != "#"
]


def _repo_paths() -> list[tuple[Path, str]]:
    found: set[tuple[Path, str]] = set()
    for path in [*PAGES, *SOURCES]:
        found.update((path, m.group(1)) for m in REPO_PATH.finditer(path.read_text()))
    return sorted(found)


@pytest.mark.parametrize(
    ("path", "target"), _repo_paths(), ids=lambda v: v.relative_to(ROOT).as_posix() if isinstance(v, Path) else v
)
def test_docs__repository_path_exists(path: Path, target: str) -> None:
    if any(ch in target for ch in "*<{"):
        return  # a pattern or placeholder, not a file
    parts = Path(target).parts
    if any(fnmatch.fnmatch("/".join(parts[: n + 1]), pattern) for n in range(len(parts)) for pattern in GITIGNORED):
        return  # made by a build or a run (docs/_build/, dist/), not in a clone
    assert (ROOT / target).exists(), f"{path.relative_to(ROOT)}: names {target!r}, which is not in the repository"


def test_docs__named_markdown_files_are_in_the_repository() -> None:
    """No reference to a page that is not here (LAB.md, STYLE.md): every ``*.md`` named exists somewhere."""
    present = {p.name for p in ROOT.rglob("*.md") if ".venv" not in p.parts[len(ROOT.parts) :][:1]}
    missing = []
    for path in [*PAGES, *SOURCES]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            missing += [f"{path.relative_to(ROOT)}:{number}: {m}" for m in MD_FILE.findall(line) if m not in present]
    assert not missing, "references to files that are not in the repository:\n" + "\n".join(missing)


def test_docs__no_reference_to_notes_outside_the_repository() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in [*PAGES, *SOURCES]
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"research notes|lab notes|internal notes", line, re.IGNORECASE)
    ]
    assert not found, "references to notes that are not in the repository:\n" + "\n".join(found)


def test_docs__every_page_is_in_a_toctree() -> None:
    """Sphinx warns about a page outside every toctree; this says which page, without building."""
    index = (DOCS / "index.md").read_text()
    entries = set(re.findall(r"^([\w/*-]+)$", index, re.MULTILINE))
    globbed = {e[:-2] for e in entries if e.endswith("/*")}
    for page in DOCS.rglob("*.md"):
        rel = page.relative_to(DOCS).with_suffix("").as_posix()
        if rel == "index" or rel.startswith(("_build/", "examples/")):
            continue
        assert rel in entries or rel.rpartition("/")[0] in globbed, f"docs/{rel}.md is in no toctree of docs/index.md"


# -- the API reference extension ------------------------------------------------------------------
def test_public_api__every_public_name_has_a_docstring() -> None:
    assert _public_api().undocumented(pytest_mh_ansible) == []


def test_public_api__lists_every_name_of_all() -> None:
    text = "\n".join(_public_api().markdown(pytest_mh_ansible))
    for name in pytest_mh_ansible.__all__:
        assert f"pytest_mh_ansible.{name}\n" in text


def test_public_api__a_new_name_appears_and_a_name_without_docstring_is_reported() -> None:
    ext = _public_api()
    fake = ModuleType("fake_pkg", "A fake package.")

    class Documented:
        """Has a docstring."""

    class Inherits(Documented):
        pass

    def undocumented_function() -> None:
        pass

    for obj in (Documented, Inherits, undocumented_function):
        obj.__module__ = "fake_pkg"
    fake.Documented = Documented  # type: ignore[attr-defined]
    fake.Inherits = Inherits  # type: ignore[attr-defined]
    fake.undocumented_function = undocumented_function  # type: ignore[attr-defined]
    fake.__all__ = ["Documented", "Inherits", "Missing", "undocumented_function"]  # type: ignore[attr-defined]
    sys.modules["fake_pkg"] = fake
    try:
        assert ext.undocumented(fake) == ["Inherits", "Missing", "undocumented_function"]
        fake.__all__ = ["Documented", "Inherits"]  # type: ignore[attr-defined]
        text = "\n".join(ext.markdown(fake))
        assert ".. autoclass:: fake_pkg.Documented" in text
        assert ".. autoclass:: fake_pkg.Inherits\n   :members:\n   :show-inheritance:" in text
    finally:
        del sys.modules["fake_pkg"]


def test_public_api__private_definitions_are_listed_under_a_public_module() -> None:
    assert _public_api().public_home(pytest_mh_ansible, "Lab") == "pytest_mh_ansible.lab"
    assert _public_api().public_home(pytest_mh_ansible, "Topology") == "pytest_mh_ansible.topology"


# -- the README's install lines -------------------------------------------------------------------
def readme_install_commands() -> list[str]:
    """The commands of the README's Install section (its first ``sh`` block), without comments."""
    section = re.search(r"^## Install\n(.*?)^## ", (ROOT / "README.md").read_text(), re.MULTILINE | re.DOTALL)
    assert section, "README.md has no '## Install' section"
    block = re.search(r"```sh\n(.*?)```", section.group(1), re.DOTALL)
    assert block, "README.md's Install section has no sh block"
    lines = (re.sub(r"\s+#.*$", "", line).strip() for line in block.group(1).splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _normalized(command: str) -> str:
    """A pip command as a user types it: no interpreter path, no -q, no redirection, no --no-compile.

    ``--no-compile`` (CI's, to save the CPU of byte-compiling the collections package) changes how
    long the install takes, not what it installs.
    """
    command = re.sub(r"^\S*python3?\"? -m pip ", "pip ", command)
    command = re.sub(r"\s+(-q|--no-compile|>/dev/null|2>&1)(?=\s|$)", "", command)
    return re.sub(r"\s+", " ", command).strip()


def ci_pip_commands() -> list[str]:
    """The pip commands scripts/test.sh runs, with its shell variables (``wheel=$(...)``) expanded."""
    script = (ROOT / "scripts" / "test.sh").read_text()
    variables = dict(re.findall(r"^(\w+)=(\$\(.*\))$", script, re.MULTILINE))
    commands = []
    for raw in script.splitlines():
        command = raw.strip()
        for name, value in variables.items():
            command = command.replace(f"${{{name}}}", value).replace(f"${name}", value)
        if re.search(r"-m pip (install|wheel) ", command):
            commands.append(_normalized(command))
    return commands


def test_readme__install_lines_are_those_ci_runs() -> None:
    """The wheel lines of the README are CI's own (CI may add packages of its own after them)."""
    readme = readme_install_commands()
    ci = ci_pip_commands()
    wheel_lines = [c for c in readme if "dist" in c]
    assert len(wheel_lines) == 2, readme
    for command in wheel_lines:
        assert any(c == command or c.startswith(command + " ") for c in ci), (
            f"README.md installs with {command!r}; scripts/test.sh does not run it (its pip commands: {ci})"
        )


def test_readme__install_lines_name_extras_that_exist() -> None:
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    for command in readme_install_commands():
        for named in re.findall(r"\[([\w,-]+)\]", command):
            assert set(named.split(",")) <= extras, f"README.md: {command!r} names an extra pyproject.toml lacks"
