"""Unit tests of behaviours a real pytest-mh suite (shadow-maint/shadow's tests/system) met through the layer.

Each test is a minimal reproduction written here, not the suite's code.
"""

from __future__ import annotations

import pytest

from pytest_mh_ansible import plugin
from pytest_mh_ansible._private.secrets import MASK, SecretStore, secrets


def test_host_file_keys_are_data_not_secrets() -> None:
    # convert-mhc keeps a host file's own keys in mh_multihost_keys / mh_domain_keys; "*key*" must not make
    # the topology names in them secrets, or every report that names the topology is masked.
    store = SecretStore()
    store.add_from_vars(
        {
            "mh_multihost_keys": {"provisioned_topologies": ["shadow"]},
            "mh_domain_keys": {"ldap": {"bind_password": "Secret123-domain"}},
        }
    )
    assert store.mask("topology 'shadow-privileged' needs a host") == "topology 'shadow-privileged' needs a host"
    assert store.mask("bind with Secret123-domain") == f"bind with {MASK}"  # a secret-named key inside still is


def test_skip_report_keeps_its_tuple_when_masked() -> None:
    # pytest's -rs summary and --junitxml assert that a skip's longrepr is (path, line, reason).
    secrets.add("k-realsuite-skip-secret")
    report = pytest.TestReport(
        nodeid="t.py::test_a",
        location=("t.py", 1, "test_a"),
        keywords={},
        outcome="skipped",
        longrepr=("t.py", 2, "Skipped: needs k-realsuite-skip-secret"),
        when="setup",
    )
    plugin._mask_report(report)
    assert report.longrepr == ("t.py", 2, f"Skipped: needs {MASK}")
