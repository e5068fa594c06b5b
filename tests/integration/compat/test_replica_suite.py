"""A replica of a real pytest-mh suite runs with one command line on pytest-mh and on pytest-mh-ansible.

The suite (tests/compat/replica) is written the way open-source pytest-mh suites are: a framework package,
``pytest_plugins = ("pytest_mh", ...)`` and no ``-p`` anywhere, ``filterwarnings = error``. Its lab is
``lab up --from-mhc`` of its own mhc.yaml (hosts client.test and server.test); both tools run
``pytest --mh-config=<the lab's mhc.yaml> --mh-lazy-ssh`` in its directory. Each test must have the same
outcome under both, and the hosts must be as before after each run. bench/replica.py times the same.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from labname import lab_name

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import replica

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

EXPECTED = {
    "test_directory::test_directory__a_failing_test_collects_artifacts[replica]": "failed",
    "test_framework::test_framework__builtwith_a_missing_feature_skips[replica]": "skipped",
    "test_framework::test_framework__require_false_skips[replica]": "skipped",
}
TESTS = 22


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    name = lab_name("mhrepl")
    with replica.replica_lab(name, tmp_path_factory.mktemp("labs") / name) as lab:
        yield lab


def _check(run: dict[str, Any]) -> dict[str, str]:
    results: dict[str, str] = run["outcomes"]
    assert len(results) == TESTS, run["output_tail"]
    unexpected = {k: v for k, v in results.items() if v != EXPECTED.get(k, "passed")}
    assert not unexpected, f"{run['tool']}: {unexpected}\n{run['output_tail']}"
    return results


def test_replica__lab_from_the_suites_host_file(lab: Lab) -> None:
    hosts = {h.fqdn: h for h in lab.hosts}
    assert set(hosts) == {"client.test", "server.test"}
    mhc = yaml.safe_load(lab.mhc_path.read_text())
    for entry in mhc["domains"][0]["hosts"]:
        assert entry["conn"] == {
            "type": "ssh",
            "host": hosts[entry["hostname"]].address,
            "username": "root",
            "private_key": str(lab.key_path),
        }
    assert mhc["domains"][0]["hosts"][1]["config"] == {"port": 7389}  # the file's own keys are kept


def test_replica__same_outcomes_on_pytest_mh_and_through_the_layer_with_one_command_line(
    lab: Lab, tmp_path: Path, record_property: Any
) -> None:
    before = replica.fingerprints(lab)
    theirs = replica.run_replica("pytest-mh", tmp_path, lab.mhc_path)
    assert replica.fingerprints(lab) == before, theirs["output_tail"]
    ours = replica.run_replica("pytest-mh-ansible", tmp_path, lab.mhc_path)
    assert replica.fingerprints(lab) == before, ours["output_tail"]
    _check(theirs)
    assert ours["outcomes"] == theirs["outcomes"], (theirs["output_tail"], ours["output_tail"])
    settings = [line for line in (replica.SUITE / "pytest.ini").read_text().splitlines() if not line.startswith("#")]
    assert "-p" not in " ".join(settings).split()  # the layer is found without it
    record_property("wall_s", {"pytest-mh": theirs["wall_s"], "pytest-mh-ansible": ours["wall_s"]})
