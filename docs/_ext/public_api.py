"""Sphinx extension: the API reference of every name in a package's ``__all__``, generated, never listed by hand.

``{public-api} pytest_mh_ansible`` in a page expands to one autodoc entry per public name, grouped by
the public module that holds it. A name added to ``__all__`` appears without editing the docs; a
public name without a docstring of its own is an error that names it, so the build (run with ``-W``)
fails.

The pages are also read on GitHub, where a link may point at any file of the repository
(``../bench/README.md``). Such a link, to a file outside ``docs/`` that exists, becomes a link to
``repository_url`` (conf.py) or, without one, the link text followed by the file's path; a link to a
file that does not exist still fails the build.

The checks are plain functions, importable without Sphinx, so the unit tests can run them.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any


def public_names(module: ModuleType) -> list[str]:
    """The names of ``module.__all__``, sorted; a module without ``__all__`` has no public API to list."""
    names = getattr(module, "__all__", None)
    if names is None:
        raise ValueError(f"module {module.__name__!r} has no __all__: the API reference lists only __all__")
    return sorted(names)


def own_docstring(obj: Any) -> str:
    """The docstring written for ``obj`` itself: a class does not count its base class's docstring."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


def undocumented(module: ModuleType) -> list[str]:
    """The public names of ``module`` that have no docstring of their own (or are missing altogether)."""
    missing = []
    for name in public_names(module):
        try:
            obj = getattr(module, name)
        except AttributeError:
            missing.append(name)
            continue
        if not own_docstring(obj):
            missing.append(name)
    return missing


def directive_for(obj: Any) -> str:
    """The autodoc directive that documents ``obj``."""
    if inspect.isclass(obj):
        return "autoexception" if issubclass(obj, BaseException) else "autoclass"
    if inspect.isfunction(obj):
        return "autofunction"
    return "autodata"


def public_home(module: ModuleType, name: str) -> str:
    """The public module a user would read ``name`` in: the defining one, unless it is private.

    A name defined in private machinery (``pkg._private.lab.lab.Lab``) is listed under the shortest
    public submodule that exposes it (``pkg.lab``), or under the package itself.
    """
    obj = getattr(module, name)
    defining = obj.__module__
    if not any(part.startswith("_") for part in defining.split(".")):
        return defining
    prefix = module.__name__ + "."
    homes = sorted(
        (
            other
            for other_name, other in sys.modules.items()
            if other_name.startswith(prefix)
            and not any(part.startswith("_") for part in other_name.split("."))
            and getattr(other, name, None) is obj
        ),
        key=lambda m: (m.__name__.count("."), m.__name__),
    )
    return homes[0].__name__ if homes else module.__name__


def groups(module: ModuleType) -> Iterator[tuple[str, str, list[str]]]:
    """``(public module, its one-line summary, public names)``, in the order of the modules' names."""
    by_module: dict[str, list[str]] = {}
    for name in public_names(module):
        by_module.setdefault(public_home(module, name), []).append(name)
    for home in sorted(by_module):
        summary = own_docstring(importlib.import_module(home)).partition("\n")[0]
        yield home, summary, by_module[home]


def is_private(cls: Any) -> bool:
    """Whether a base class is private machinery (``_Name``), not part of the API a reader sees."""
    return str(getattr(cls, "__name__", "")).startswith("_")


def class_options(cls: type) -> list[str]:
    """The autodoc options of a public class.

    The public methods a class gets from a private base (``_Name``) are listed as its own, and the
    private base is not named among its bases: a shared implementation is a private detail.
    """
    options = ["   :members:"]
    if any(is_private(base) for base in cls.__bases__):
        public = ", ".join(base.__name__ for base in cls.__mro__[1:] if not is_private(base))
        options.append(f"   :inherited-members: {public}")
    if [base for base in cls.__bases__ if not is_private(base)] not in ([], [object]):
        options.append("   :show-inheritance:")
    return options


def markdown(module: ModuleType) -> list[str]:
    """The MyST markdown the directive expands to: a section per defining module, autodoc in reST."""
    lines: list[str] = []
    for defining, summary, names in groups(module):
        lines += [f"## `{defining}`", "", summary, "", "```{eval-rst}"]
        for name in names:
            obj = getattr(module, name)
            lines.append(f".. {directive_for(obj)}:: {module.__name__}.{name}")
            if inspect.isclass(obj):
                lines += class_options(obj)
            lines.append("")
        lines += ["```", ""]
    return lines


def repository_file(srcdir: Path, refdoc: str, target: str, known_doc: bool) -> str | None:
    """The path, relative to the repository (``srcdir``'s parent), of a file a link points at outside the docs.

    ``target`` is what MyST made of the link: a document name (absolute, or relative to ``srcdir``)
    or the raw path relative to the linking page. ``None`` when the link is not such a file.
    """
    if known_doc:
        return None
    root = srcdir.parent.resolve()
    candidates = [Path(target), Path(f"{target}.md")] if Path(target).is_absolute() else []
    candidates += [(srcdir / refdoc).parent / target, srcdir / target, srcdir / f"{target}.md"]
    for candidate in candidates:
        path = candidate.resolve()
        if path.exists() and path.is_relative_to(root) and not path.is_relative_to(srcdir.resolve()):
            return path.relative_to(root).as_posix() + ("/" if path.is_dir() else "")
        if path.exists() and path.is_dir() and path.is_relative_to(srcdir.resolve()):
            return path.relative_to(root).as_posix() + "/"  # a folder of docs/ (the example's code)
    return None


def setup(app: Any) -> dict[str, Any]:
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx import addnodes
    from sphinx.transforms.post_transforms import SphinxPostTransform
    from sphinx.util import logging
    from sphinx.util.docutils import SphinxDirective
    from sphinx.util.nodes import nested_parse_with_titles

    logger = logging.getLogger(__name__)

    class PublicApi(SphinxDirective):
        """``{public-api} package`` (in a MyST page): autodoc for each name of the package's ``__all__``."""

        required_arguments = 1

        def run(self) -> list[nodes.Node]:
            module = importlib.import_module(self.arguments[0])
            for name in undocumented(module):
                logger.warning(
                    "%s.%s is public (in __all__) but has no docstring of its own",
                    module.__name__,
                    name,
                    location=self.get_location(),
                )
            content = StringList()
            for line in markdown(module):
                content.append(line, f"<public-api {module.__name__}>")
            container = nodes.section()
            container.document = self.state.document
            nested_parse_with_titles(self.state, content, container)
            return list(container.children)

    class RepositoryLinks(SphinxPostTransform):
        """Links to files of the repository outside the docs, before MyST would call them missing."""

        default_priority = 8  # MyST's reference resolver runs at 9

        def run(self, **kwargs: Any) -> None:
            srcdir = Path(self.app.srcdir)
            for node in list(self.document.findall(addnodes.pending_xref)):
                if node.get("reftype") != "myst":
                    continue
                target = node["reftarget"]
                known = node.get("refdomain") == "doc" and target in self.env.all_docs
                path = repository_file(srcdir, node.get("refdoc", self.env.docname), target, known)
                if path is None:
                    continue
                text = node[0].deepcopy() if len(node) else nodes.Text(path)
                url = self.config.repository_url
                if url:
                    node.replace_self(nodes.reference("", "", text, refuri=f"{url.rstrip('/')}/{path}"))
                else:
                    node.replace_self(
                        nodes.inline("", "", text, nodes.Text(" ("), nodes.literal(path, path),
                                     nodes.Text(" in the repository)"))
                    )  # fmt: skip

    def drop_private_bases(app: Any, name: str, obj: Any, options: Any, bases: list[Any]) -> None:
        bases[:] = [base for base in bases if not is_private(base)]

    app.connect("autodoc-process-bases", drop_private_bases)
    app.add_config_value("repository_url", "", "html")
    app.add_directive("public-api", PublicApi)
    app.add_post_transform(RepositoryLinks)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
