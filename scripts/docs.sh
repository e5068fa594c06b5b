#!/usr/bin/env bash
# Build the documentation (docs/ → docs/_build/html) with warnings as errors, as CI does.
# Installs the `docs` extra into ./.venv first if Sphinx is not there (run scripts/setup.sh before).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin
if ! "$PY/python" -c "import sphinx, myst_parser, furo" 2>/dev/null; then
    "$PY/python" -m pip install -q -e '.[docs]' >/dev/null
fi
echo "== docs: sphinx-build -W (docs/_build/html)"
# -E: read every page again, so a changed docstring or a new public name is never served from the cache.
"$PY/sphinx-build" -E -W --keep-going -q -b html docs docs/_build/html
