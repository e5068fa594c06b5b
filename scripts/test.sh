#!/usr/bin/env bash
# The project's tests, as CI runs them: install everything, lint, unit and functional tests (pytest 9 and 8),
# the collection's unit tests, then the integration tests on lab hosts against the built wheel, installed
# into a fresh virtualenv. Nothing is taken from PATH but the system's tools: every program of Python's
# side comes from the virtualenvs this script makes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY=.venv/bin
# A test that needs the lab (or root) fails instead of skipping (tests/conftest.py).
export MH_TEST_NO_SKIP=1

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
bash scripts/docs.sh

echo "== unit and functional tests (pytest $("$PY/pytest" --version | awk '{print $2}'))"
"$PY/pytest" tests/unit tests/functional -n 2

echo "== the collection's unit tests"
(cd collections/ansible_collections/mh_ansible/rollback &&
    PYTHONPATH="$PWD/../../.." "../../../../$PY/pytest" tests/unit -q -p no:cacheprovider)

echo "== functional tests on pytest 8"
if [ ! -x .venv-pytest8/bin/python ]; then
    .venv/bin/python -m venv .venv-pytest8
fi
.venv-pytest8/bin/python -m pip install -q 'pytest>=8.4,<9' pytest-xdist -e . >/dev/null
.venv-pytest8/bin/pytest tests/functional -n 2 -q -p no:randomly

echo "== the wheel, installed into a fresh virtualenv"
rm -rf dist .venv-wheel
"$PY/python" -m pip wheel -q --no-deps -w dist . >/dev/null
wheel=$(ls dist/pytest_mh_ansible-*.whl)
"$PY/python" -m venv .venv-wheel
.venv-wheel/bin/python -m pip install -q --upgrade pip >/dev/null
.venv-wheel/bin/python -m pip install -q "${wheel}[collections]" pytest-xdist >/dev/null
echo "installed $(basename "$wheel") into .venv-wheel"

echo "== integration tests on lab hosts (the installed wheel)"
MH_TEST_INSTALLED=1 .venv-wheel/bin/pytest tests/integration tests/collection tests/bench
