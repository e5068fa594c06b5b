"""Sphinx configuration of the pytest-mh-ansible documentation (``bash scripts/docs.sh`` builds it)."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))  # the checkout's package, also when it is not installed

project = "pytest-mh-ansible"
author = "pytest-mh-ansible developers"
copyright = "pytest-mh-ansible developers"
try:
    release = metadata.version("pytest-mh-ansible")
except metadata.PackageNotFoundError:
    release = "unknown"
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "public_api",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "examples"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_class_signature = "separated"
autodoc_preserve_defaults = True

try:
    import furo  # noqa: F401

    html_theme = "furo"
except ImportError:
    html_theme = "alabaster"
html_title = f"{project} {release}"
