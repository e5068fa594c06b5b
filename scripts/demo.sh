#!/usr/bin/env bash
# The main job: install everything, bring up the example's lab, run the example suite on it, tear it down.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd docs/examples/webapp
# --mh-lab brings the lab of inventory/webapp.yml up for the session and down at its end (also on Ctrl-C).
# The "=" form keeps pytest from taking the spec's directory for its rootdir.
exec ../../../.venv/bin/pytest --mh-lab=../../../inventory/webapp.yml -v -rA --no-header "$@"
