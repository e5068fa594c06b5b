#!/usr/bin/env bash
# The project's tests: install everything, lint, then unit, functional and integration tests (lab hosts).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY=.venv/bin

cleanup() {
    # Labs are torn down by their fixtures; this catches a run that was killed half-way.
    for name in mhcore mheng mhlabt mhlabt2 mhtransport mhmod mhrep mhutila mhutilb mhwarm mhwfault mhsmoke mhbench webapp; do
        "$PY/pytest-mh-ansible" lab down --name "$name" >/dev/null 2>&1 || true
    done
}
trap cleanup EXIT

echo "== lint: ruff, mypy --strict"
"$PY/ruff" check .
"$PY/ruff" format --check .
"$PY/mypy"

echo "== unit and functional tests (pytest $("$PY/pytest" --version | awk '{print $2}'))"
"$PY/pytest" tests/unit tests/functional -n 2

echo "== functional tests on pytest 8"
if [ ! -x .venv-pytest8/bin/python ]; then
    .venv/bin/python -m venv .venv-pytest8
fi
.venv-pytest8/bin/python -m pip install -q 'pytest>=8.4,<9' pytest-xdist -e . >/dev/null
.venv-pytest8/bin/pytest tests/functional -n 2 -q -p no:randomly

echo "== integration tests on lab hosts"
"$PY/pytest" tests/integration tests/collection tests/bench
