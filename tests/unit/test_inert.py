"""The plugin is inert until an inventory is given: loading it imports neither Ansible nor the lab."""

from __future__ import annotations

import subprocess
import sys


def test_plugin__import_loads_no_ansible_yaml_or_lab() -> None:
    code = (
        "import sys, pytest_mh_ansible.plugin\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('ansible', 'ansible_runner', 'paramiko', 'yaml')"
        " or m.startswith('pytest_mh_ansible._private.lab'))\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
