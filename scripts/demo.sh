#!/usr/bin/env bash
# The main job: install everything, bring up the example's lab, run the example suite on it, tear it down.
# The example undoes every change it makes: a "not reverted" line in the run's summary fails the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd docs/examples/webapp
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# --mh-lab brings the lab of inventory/webapp.yml up for the session and down at its end (also on Ctrl-C:
# tee -i ignores the interrupt, so pytest keeps its output while it tears the lab down).
# The "=" form keeps pytest from taking the spec's directory for its rootdir.
set +e
../../../.venv/bin/pytest --mh-lab=../../../inventory/webapp.yml -v -rA --no-header "$@" 2>&1 | tee -i "$out"
rc=${PIPESTATUS[0]}
set -e
if grep -q "not reverted" "$out"; then
    echo "demo: the example left changes on its hosts (the 'not reverted' lines above)" >&2
    exit 1
fi
exit "$rc"
