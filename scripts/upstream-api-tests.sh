#!/usr/bin/env bash
# pytest-mh's own tests of its public API, run through this project's compatibility layer, file by file.
#
#   scripts/upstream-api-tests.sh PYTEST_MH_SOURCE [--ref 1.0.30] [--wheel FILE | --commit REV] [--failures FILE]
#                                  [--reference] [--no-conftest] [--automatic]
#
# PYTEST_MH_SOURCE is a git repository of next-actions/pytest-mh (a clone or a bare mirror; the files are
# taken at --ref, default the tag 1.0.30) or a directory holding its conftest.py, pytest.ini and tests/
# (pytest-mh's sdist on PyPI has no tests, so it will not do). The files are copied into a temporary
# directory and never into this repository: pytest-mh is GPL-licensed.
#
# They run in a virtualenv that has this project's wheel (built from this checkout's files, or from its
# commit REV with --commit, unless --wheel names one), ansible-core (MH_CORE, default 2.19) and pytest-mock (the tests' own requirement), and not
# pytest-mh: `import pytest_mh` is served by the layer (with -p pytest_mh_ansible.compat.plugin unless the
# wheel loads the layer by itself). Each file runs alone, so that one that does not import cannot hide
# the others; the script prints passed/failed/errors/skipped per file and the total, writes every test
# that did not pass to --failures, and exits 1 if a test of the public-API files (test_cli, test_conn,
# test_marks, test_topology) did not pass. test_misc and test_multihost import pytest-mh's private
# modules (pytest_mh._private): they run and are counted, but do not decide the exit code.
# --reference runs the same files on the real pytest-mh 1.0.30 in a virtualenv of its own, for comparison.
# --no-conftest leaves pytest-mh's conftest.py out (it imports pytest_mh.conn.ssh and .container), to see
# the files alone when the conftest does not import. --automatic leaves out -p pytest_mh_ansible.compat.plugin:
# the layer must then serve `import pytest_mh` by itself, pytest-mh not being installed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

usage() {
    sed -n '3,5p' "$0" | sed 's/^# *//' >&2
    exit 2
}
[ $# -ge 1 ] || usage
source_dir=$1
shift
ref=1.0.30
wheel=""
commit=""
failures=""
reference=0
no_conftest=0
automatic=0
while [ $# -gt 0 ]; do
    case $1 in
    --ref) ref=$2 && shift 2 ;;
    --wheel) wheel=$2 && shift 2 ;;
    --commit) commit=$2 && shift 2 ;;
    --failures) failures=$2 && shift 2 ;;
    --reference) reference=1 && shift ;;
    --no-conftest) no_conftest=1 && shift ;;
    --automatic) automatic=1 && shift ;;
    *) usage ;;
    esac
done
PUBLIC_API_FILES=(test_cli test_conn test_marks test_topology)
ALL_FILES=(test_cli test_conn test_marks test_topology test_misc test_multihost)
CACHE=${MH_UPSTREAM_CACHE:-${TMPDIR:-/tmp}/pytest-mh-ansible-upstream-api}
PYTHON=${MH_UPSTREAM_PYTHON:-$ROOT/.venv/bin/python}
mkdir -p "$CACHE"
work=$(mktemp -d "$CACHE/run.XXXXXX")
trap 'rm -rf "$work"' EXIT

# pytest-mh's test files, at the tag, into the temporary directory
mkdir -p "$work/suite"
if git -C "$source_dir" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$source_dir" archive "$ref" conftest.py pytest.ini tests | tar -x -C "$work/suite"
    echo "== pytest-mh's tests at $ref ($(git -C "$source_dir" rev-parse --short "$ref^{commit}")) of $source_dir"
elif [ -d "$source_dir/tests" ]; then
    cp -r "$source_dir/tests" "$work/suite/"
    for f in conftest.py pytest.ini; do
        [ ! -f "$source_dir/$f" ] || cp "$source_dir/$f" "$work/suite/"
    done
    echo "== pytest-mh's tests of $source_dir"
else
    echo "upstream-api-tests: $source_dir is neither a git repository of pytest-mh nor a directory with tests/" >&2
    exit 2
fi

if [ "$no_conftest" = 1 ]; then
    rm -f "$work/suite/conftest.py"
    echo "== without pytest-mh's conftest.py"
fi

# the virtualenv: this project's wheel, no pytest-mh
pip_quiet() {
    # pip, its output kept unless it fails (the index configuration's warnings are noise here)
    "$@" >"$work/pip.log" 2>&1 || { cat "$work/pip.log" >&2 && exit 1; }
}
if [ -z "$wheel" ]; then
    built_from=.
    if [ -n "$commit" ]; then
        built_from=$work/source
        mkdir -p "$built_from"
        git archive "$commit" | tar -x -C "$built_from"
        echo "== this project at $(git rev-parse --short "$commit^{commit}")"
    fi
    pip_quiet "$PYTHON" -m pip wheel -q --no-deps -w "$work/dist" "$built_from"
    wheel=$(ls "$work"/dist/pytest_mh_ansible-*.whl)
fi
venv=$CACHE/venv-layer
[ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
pip_quiet "$venv/bin/python" -m pip install -q "$wheel" "${MH_CORE:-ansible-core>=2.19,<2.20}" pytest-mock
pip_quiet "$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel"
if "$venv/bin/python" -m pip show -q pytest-mh >/dev/null 2>&1; then
    echo "upstream-api-tests: pytest-mh is installed in $venv: the layer would not be what runs" >&2
    exit 2
fi
plugin=(-p pytest_mh_ansible.compat.plugin)
if "$venv/bin/python" - <<'EOF'; then
import importlib.metadata as m
raise SystemExit(0 if any(e.value.startswith("pytest_mh_ansible.compat") for e in m.entry_points(group="pytest11")) else 1)
EOF
    plugin=()  # the wheel loads the layer by itself
fi
[ "$automatic" = 0 ] || plugin=()
echo "== $(basename "$wheel") in $venv: $("$venv/bin/python" --version)," \
    "pytest $("$venv/bin/python" -c 'import pytest; print(pytest.__version__)')," \
    "ansible-core $("$venv/bin/python" -c 'import ansible.release as r; print(r.__version__)') ${plugin[*]}"

run_files() {
    # run_files PYTHON LABEL PLUGIN_ARGS...: each file alone, junit per file; prints the table
    local python=$1 label=$2
    shift 2
    for name in "${ALL_FILES[@]}"; do
        [ -f "$work/suite/tests/$name.py" ] || continue
        (cd "$work/suite" && "$python" -m pytest "$@" "tests/$name.py" -q -p no:cacheprovider \
            --junitxml="$work/$label-$name.xml" >"$work/$label-$name.log" 2>&1) || true
    done
    "$python" - "$work" "$label" "$failures" "${PUBLIC_API_FILES[@]}" <<'EOF'
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

work, label, failures_path, public = Path(sys.argv[1]), sys.argv[2], sys.argv[3], set(sys.argv[4:])
rows, failed_tests, public_ok = [], [], True
totals = dict.fromkeys(("passed", "failed", "errors", "skipped", "tests"), 0)
for log_file in sorted(work.glob(f"{label}-test_*.log")):
    name = log_file.stem.removeprefix(f"{label}-")
    junit = log_file.with_suffix(".xml")
    counts = dict.fromkeys(totals, 0)
    for case in ET.parse(junit).getroot().iter("testcase") if junit.exists() else ():
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "errors", "skipped": "skipped"}[child.tag]
                message = (child.get("message") or child.text or "").strip().splitlines()
                if outcome != "skipped":
                    failed_tests.append(f"{name}::{case.get('name')}: {outcome}: {message[0] if message else ''}")
        counts[outcome] += 1
        counts["tests"] += 1
    if counts["tests"] == 0:  # nothing collected: the file (or the conftest) does not import
        log = log_file.read_text().strip().splitlines()
        reason = next((line for line in reversed(log) if "Error" in line), log[-1] if log else "no output")
        failed_tests.append(f"{name}: collected nothing: {reason}")
        counts["errors"] = 1
    rows.append((name, counts))
    for key in totals:
        totals[key] += counts[key]
    if name in public and (counts["failed"] or counts["errors"] or counts["tests"] == 0):
        public_ok = False
print(f"{'file':<16} {'passed':>6} {'failed':>6} {'errors':>6} {'skipped':>7} {'tests':>5}")
for name, c in [*rows, ("total", totals)]:
    mark = "" if name in public or name == "total" else "  (imports pytest_mh._private)"
    print(f"{name:<16} {c['passed']:>6} {c['failed']:>6} {c['errors']:>6} {c['skipped']:>7} {c['tests']:>5}{mark}")
public_rows = [c for name, c in rows if name in public]
print(
    f"public-API files: {sum(c['passed'] for c in public_rows)}/{sum(c['tests'] for c in public_rows)} passed"
)
if failures_path and label == "layer":
    Path(failures_path).write_text("".join(f"{line}\n" for line in failed_tests))
for line in failed_tests:
    print(f"  {line}")
raise SystemExit(0 if public_ok else 1)
EOF
}

echo "== through the layer"
rc=0
run_files "$venv/bin/python" layer "${plugin[@]}" || rc=$?

if [ "$reference" = 1 ]; then
    ref_venv=$CACHE/venv-pytest-mh
    [ -x "$ref_venv/bin/python" ] || "$PYTHON" -m venv "$ref_venv"
    pip_quiet "$ref_venv/bin/python" -m pip install -q "pytest-mh==$ref" pytest-mock
    echo "== on pytest-mh $ref itself ($("$ref_venv/bin/python" --version)," \
        "pytest $("$ref_venv/bin/python" -c 'import pytest; print(pytest.__version__)'))"
    failures="" run_files "$ref_venv/bin/python" reference || true
fi
exit "$rc"
