"""``pytest_mh.utils``: pytest-mh's bundled utilities by their names, on this project's reversible utilities."""

from __future__ import annotations
