#!/usr/bin/env bash
# The project's tests, as CI runs them: install everything, lint, the docs, the unit tests on each
# supported ansible-core (2.19 on Python 3.11 with pytest 9, 2.20 on 3.12 with pytest 8, 2.21 on 3.13), the
# functional tests (the plugin in pytester runs) on pytest 9 and, those of configuration and node ids, on
# pytest 8, the collection's unit tests, and meanwhile the integration tests on lab hosts against the built
# wheel, installed into fresh virtualenvs, on the oldest (2.19 / 3.11) and the newest (2.21 / 3.13)
# ansible-core, each on one of them (MH_TEST_BENCH=1 adds the bench harness's).
# Nothing is taken from PATH but the system's tools: every program of Python's side comes from the
# virtualenvs this script makes. Python 3.12 and 3.13 come from pyenv, at a fixed place (PYENV_ROOT,
# default $HOME/.pyenv), or from MH_PYTHON312 / MH_PYTHON313; without them the run fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# Python's bytecode caches are written and reused. An environment that sets PYTHONDONTWRITEBYTECODE (container
# images often do) makes every Python process of the run compile what it imports from source again: ~1.5 s of
# CPU for each pytest that loads ansible-core, and the functional tests alone start 82 of them (measured on
# two cores: 391 s of CPU with the variable, 209 s without). The run writes the caches into its own
# virtualenvs and this checkout only.
unset PYTHONDONTWRITEBYTECODE

# Every step's duration, printed at the end (and when a step fails).
STEPS=()
step_name=""
step_started=0
step() {
    step_done
    step_name=$1
    step_started=$SECONDS
    echo "== $1"
}
step_done() {
    if [ -n "$step_name" ]; then
        STEPS+=("$(printf '%4d s  %s' $((SECONDS - step_started)) "$step_name")")
        step_name=""
    fi
}
# This run's tag, in the name of every lab it brings up (MH_TEST_LAB_SUFFIX, tests/integration/labname.py):
# lab names are machine-wide, and another run on the same machine (a second checkout, or a run of an
# earlier commit still going) must neither collide with this one's labs nor have them taken by this
# one's clean-up. Five hex digits from the shell's pid and $RANDOM.
RUN_TAG=$(printf '%05x' $(((($$ << 15) + RANDOM) % 1048576)))
echo "== this run's labs are named <base>o$RUN_TAG and <base>n$RUN_TAG (an xdist worker after a dash)"

cleanup() {
    local rc=$?
    step_done
    # Integration runs still going (the script was stopped): SIGTERM makes them roll back and end.
    local running
    running=$(jobs -p)
    if [ -n "$running" ]; then
        kill -TERM $running 2>/dev/null || true
        wait $running 2>/dev/null || true
    fi
    # Labs are torn down by their fixtures; this catches a run that was killed half-way: every lab of the
    # registry that this run named (a base, this run's suffix o$RUN_TAG or n$RUN_TAG, an xdist worker;
    # labname.py). Labs of other runs on the machine are theirs: left alone.
    RUN_TAG=$RUN_TAG .venv/bin/python - >/dev/null 2>&1 <<'EOF' || true
import os
import re
from pytest_mh_ansible._private.cli import main
from pytest_mh_ansible._private.lab import registry
tag = re.escape(os.environ["RUN_TAG"])
for name in registry.entries():
    if re.fullmatch(rf"[a-z]+[on]{tag}(-[0-9]+)?", name):
        main(["lab", "down", "--name", name])
EOF
    echo "== step durations (total $SECONDS s)"
    printf '%s\n' "${STEPS[@]}"
    exit "$rc"
}
trap cleanup EXIT

pyenv_python() {
    # The newest pyenv build of Python $1, or the variable that names one; a clear failure otherwise.
    local version=$1 override=$2 found=""
    if [ -n "${!override:-}" ]; then
        found=${!override}
    else
        for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/python"$version"; do
            [ -x "$candidate" ] && found=$candidate
        done
    fi
    if [ -z "$found" ] || ! "$found" -c 'import sys, venv' >/dev/null 2>&1; then
        echo "scripts/test.sh: no Python $version found (looked in ${PYENV_ROOT:-$HOME/.pyenv}/versions/$version.*;" \
            "set $override=/path/to/python$version). ansible-core 2.20 and 2.21 need it: failing." >&2
        exit 1
    fi
    echo "$found"
}

core_venv() {
    # A virtualenv with this checkout (editable), one ansible-core and one pytest: core_venv DIR PYTHON SPEC...
    # (not the dev extra: lint runs once, in .venv).
    local dir=$1 python=$2
    shift 2
    if [ ! -x "$dir/bin/python" ]; then
        "$python" -m venv "$dir"
    fi
    "$dir/bin/python" -m pip install -q --no-compile -e . 'pytest-xdist>=3.5' "$@" >/dev/null
    echo "$dir: $("$dir/bin/python" --version), ansible-core $("$dir/bin/python" -c 'import ansible.release as r; print(r.__version__)')," \
        "pytest $("$dir/bin/python" -c 'import pytest; print(pytest.__version__)')"
}

wheel_venv() {
    # A fresh virtualenv with the built wheel (not editable), the collections and one ansible-core.
    local dir=$1 python=$2 spec=$3
    rm -rf "$dir"
    "$python" -m venv "$dir"
    "$dir/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$dir/bin/python" -m pip install -q --no-compile "${wheel}[collections]" "$spec" pytest-xdist >/dev/null
    echo "installed $(basename "$wheel") into $dir: $("$dir/bin/python" --version)," \
        "ansible-core $("$dir/bin/python" -c 'import ansible.release as r; print(r.__version__)')"
}

step "setup: system packages, .venv (Python 3.11, ansible-core 2.19)"
PY312=$(pyenv_python 3.12 MH_PYTHON312)
PY313=$(pyenv_python 3.13 MH_PYTHON313)
bash scripts/setup.sh
PY=.venv/bin
# A test that needs the lab (or root) fails instead of skipping (tests/conftest.py).
export MH_TEST_NO_SKIP=1

# The integration tests start first, in the background, the oldest and the newest ansible-core side by side
# (each with two xdist workers), and the other steps run meanwhile. Lab hosts live on this machine, so the
# integration tests are CPU-bound (a module call's Python runs on the same two cores as the controller;
# measured alone: 704 s, both cores 95 % busy) and the run's length is its total work: each integration
# test runs once, on one of the two ansible-cores. The warm executor's own tests (its field-by-field
# equivalence with ansible-core's task executor, and its faults: the layer that leans most on ansible-core's
# internals, compat.py) run on the newest; on the oldest, every test that calls a module goes through it
# (it is the default executor). The two halves are about equal (measured alone, 2 workers: their tests'
# times add up to 590 s and 585 s); the longest tests come first in each, so that its two workers end close
# together. Lab names carry the xdist worker and MH_TEST_LAB_SUFFIX (o or n, and this run's tag), so no two
# workers share a lab. Their output is kept in files and shown when they end.
OLDEST_ONLY=(tests/integration/engine tests/integration/compat tests/integration/compat_api tests/integration/lab
    tests/integration/modules tests/soak tests/integration/parallel tests/integration/install tests/integration/core
    tests/integration/reporting tests/integration/utils_net)
NEWEST_ONLY=(tests/integration/rollback_states tests/integration/utils_core tests/integration/warm tests/integration/transport tests/collection
    tests/integration/warm_faults tests/integration/export tests/integration/example tests/integration/signals)
# The bench harness's smoke tests (bench/compare.py and bench/pools.py on labs of their own, ~180 s of
# test time) test the bench scripts, not the product: MH_TEST_BENCH=1 adds them.
if [ "${MH_TEST_BENCH:-0}" = 1 ]; then
    OLDEST_ONLY=(tests/bench "${OLDEST_ONLY[@]}")
fi
oldest_log=$(mktemp)
newest_log=$(mktemp)

step "the wheel, installed into a fresh virtualenv (2.19 / Python 3.11); its integration tests started (background)"
rm -rf dist
"$PY/python" -m pip wheel -q --no-deps -w dist . >/dev/null
wheel=$(ls dist/pytest_mh_ansible-*.whl)
wheel_venv .venv-wheel "$PY/python" 'ansible-core>=2.19,<2.20'
integration_started=$SECONDS
MH_TEST_INSTALLED=1 MH_TEST_LAB_SUFFIX="o$RUN_TAG" .venv-wheel/bin/pytest "${OLDEST_ONLY[@]}" \
    -n 2 -p no:cacheprovider --durations=10 >"$oldest_log" 2>&1 &
oldest=$!

step "the wheel, installed into a fresh virtualenv (2.21 / Python 3.13); its integration tests started (background)"
wheel_venv .venv-wheel-2.21 "$PY313" 'ansible-core>=2.21,<2.22'
MH_TEST_INSTALLED=1 MH_TEST_LAB_SUFFIX="n$RUN_TAG" .venv-wheel-2.21/bin/pytest "${NEWEST_ONLY[@]}" \
    -n 2 -p no:cacheprovider --durations=10 >"$newest_log" 2>&1 &
newest=$!

# Lint, the docs and the other steps come once the integration runs have started: they are the longest
# path of the run, and these steps only compete with them for the CPU. A lint or docs failure still ends
# the run at once (set -e; the EXIT trap stops the integration runs and their labs).
step "lint: ruff, mypy --strict"
"$PY/ruff" check .
"$PY/ruff" format --check .
"$PY/mypy"

step "docs: Sphinx, warnings as errors"
bash scripts/docs.sh

step "setup: .venv-core2.20 (Python 3.12, pytest 8)"
core_venv .venv-core2.20 "$PY312" 'ansible-core>=2.20,<2.21' 'pytest>=8.4,<9'

# The foreground steps do not stop the run when they fail: the integration runs are waited for (and their
# labs torn down) either way; the run fails at the end.
failed=()
step "unit and functional tests: ansible-core 2.19, Python 3.11, pytest $("$PY/pytest" --version | awk '{print $2}')"
"$PY/pytest" tests/unit tests/functional -n 2 -q || failed+=("unit and functional tests, ansible-core 2.19")

step "the collection's unit tests"
(cd collections/ansible_collections/mh_ansible/rollback &&
    PYTHONPATH="$PWD/../../.." "../../../../$PY/pytest" tests/unit -q -p no:cacheprovider) ||
    failed+=("the collection's unit tests")

# test_imports (each module imported alone in a fresh interpreter: no import cycle; ~60 s of CPU, the
# unit tests' largest part) checks the package's structure, the same on every ansible-core: it ran above.
# On pytest 8, the functional tests of what pytest's versions change most: the ini file and rootdir
# (test_rootdir), node ids and their topology names (test_topology_names). The others ran on pytest 9 above.
step "unit tests and the functional tests of configuration and node ids: ansible-core 2.20, Python 3.12, pytest 8"
.venv-core2.20/bin/pytest tests/unit tests/functional/test_rootdir.py tests/functional/test_topology_names.py \
    --ignore=tests/unit/test_imports.py -n 2 -q || failed+=("unit and functional tests, ansible-core 2.20")

# The installed wheel's unit tests: the 2.21 integration run's virtualenv has all they need.
step "unit tests: ansible-core 2.21, Python 3.13 (the installed wheel)"
MH_TEST_INSTALLED=1 .venv-wheel-2.21/bin/pytest tests/unit --ignore=tests/unit/test_imports.py -n 2 -q -p no:cacheprovider ||
    failed+=("unit tests, ansible-core 2.21")

step "integration tests: waiting for them to end"
oldest_rc=0
wait "$oldest" || oldest_rc=$?
newest_rc=0
wait "$newest" || newest_rc=$?
step_done
STEPS+=("$(printf '%4d s  %s' $((SECONDS - integration_started)) "integration tests, both runs (in the background from their start)")")
echo "== integration tests on lab hosts: ansible-core 2.19, Python 3.11 (rc $oldest_rc)"
cat "$oldest_log"
echo "== integration tests on lab hosts: ansible-core 2.21, Python 3.13 (rc $newest_rc)"
cat "$newest_log"
rm -f "$oldest_log" "$newest_log"
[ "$oldest_rc" -eq 0 ] || failed+=("integration tests, ansible-core 2.19")
[ "$newest_rc" -eq 0 ] || failed+=("integration tests, ansible-core 2.21")
if [ "${#failed[@]}" -gt 0 ]; then
    printf '== failed: %s\n' "${failed[@]}"
    exit 1
fi
