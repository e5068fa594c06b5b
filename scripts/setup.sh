#!/usr/bin/env bash
# Install what pytest-mh-ansible, its lab and its tests need on a Debian machine (root), into ./.venv.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(openssh-server openssh-client sshpass sudo iproute2 psmisc procps python3 python3-apt
              systemd dbus util-linux coreutils python3-venv)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "setup: installing apt packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# --no-compile: the collections package alone has ~16,000 modules, and byte-compiling them all costs
# ~40 s of CPU (measured: 53 s → 13 s for its install); Python compiles the few it imports when it does.
.venv/bin/python -m pip install -q --no-compile -e '.[dev,collections]'
echo "setup: $(.venv/bin/python --version), $(.venv/bin/ansible --version 2>/dev/null | sed -n 1p), $(.venv/bin/pytest --version)"
