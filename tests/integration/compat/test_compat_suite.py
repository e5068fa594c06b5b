"""A pytest-mh-style suite runs unchanged on lab hosts under pytest-mh and through the compatibility layer.

The suite (tests/compat/suite) is written against pytest-mh's public API only. pytest-mh 1.0.30 runs it
from its own virtualenv with ``mhc.yaml``; pytest-mh-ansible with ``-p pytest_mh_ansible.compat.plugin``
and the inventory ``convert-mhc`` made from the same file. Each test must have the same outcome under
both, the hosts must be as before after each run.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labname import lab_name

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import compat_suite

from pytest_mh_ansible._private.ansible import compat as ansible_compat
from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

EXPECTED = {
    "test_commands::test_commands__a_failing_command_fails_the_test[client]": "failed",
    "test_lifecycle::test_require__kwargs_get_every_fixture[client]": "skipped",
    "test_lifecycle::test_require__tuple_with_reason_skips[client]": "skipped",
    "test_lifecycle::test_marker__reads_multihost_item_data[client]": "skipped",
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    name = lab_name("mhcompat")
    with compat_suite.compat_lab(name, tmp_path_factory.mktemp("labs") / name) as lab:
        yield lab


@pytest.fixture(scope="module")
def configs(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Path]]:
    work = tmp_path_factory.mktemp("compat")
    mhc, inventories = compat_suite.write_configs(lab, work)
    return work, mhc, inventories


def _check(run: dict[str, Any]) -> dict[str, str]:
    results: dict[str, str] = run["outcomes"]
    assert results, run["output_tail"]
    unexpected = {k: v for k, v in results.items() if v != EXPECTED.get(k, "passed")}
    assert not unexpected, f"{run['tool']}: {unexpected}\n{run['output_tail']}"
    assert set(EXPECTED) <= set(results), run["output_tail"]
    return results


# ansible-core 2.21 removed the paramiko connection plugin: there this run goes over ssh.
PARAMIKO_OR_SSH = "paramiko" if ansible_compat.paramiko_plugin_available() else "ssh"


def test_compat_suite__runs_unchanged_through_the_layer_on_paramiko(
    lab: Lab, configs: tuple[Path, Path, dict[str, Path]]
) -> None:
    work, mhc, inventories = configs
    before = compat_suite.fingerprints(lab)
    run = compat_suite.run_suite(f"ours-{PARAMIKO_OR_SSH}", work, mhc, inventories[PARAMIKO_OR_SSH])
    results = _check(run)
    assert len(results) == 22
    assert compat_suite.fingerprints(lab) == before


def test_compat_suite__same_outcomes_as_pytest_mh(lab: Lab, configs: tuple[Path, Path, dict[str, Path]]) -> None:
    work, mhc, inventories = configs
    before = compat_suite.fingerprints(lab)
    theirs = compat_suite.run_suite("pytest-mh", work, mhc, inventories["ssh"])
    assert compat_suite.fingerprints(lab) == before
    ours = compat_suite.run_suite("ours-ssh", work, mhc, inventories["ssh"])
    assert compat_suite.fingerprints(lab) == before
    assert theirs["outcomes"] == ours["outcomes"], (theirs["output_tail"], ours["output_tail"])
    _check(theirs)
