"""The inventory cache as a user meets it: an unchanged inventory's second run collects without ansible-core."""

from __future__ import annotations

from pathlib import Path

import pytest

TEST = """
import sys
import pytest
from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

CLIENT = TopologyMark("c", Topology(TopologyDomain("app", client=1)), fixtures=dict(client="app.client[0]"))

@pytest.mark.topology(CLIENT)
def test_a(client):
    assert client.host.vars["mh_domain"] == "app"
    assert client.host.ansible.run("ansible.builtin.command", cmd="echo hi").raw["stdout"] == "hi"
"""

PROBE = """
import sys

def pytest_collection_finish(session):
    loaded = "ansible.constants" in sys.modules
    print(f"ANSIBLE-AT-COLLECTION={loaded}")
"""


@pytest.fixture
def cached_project(project: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The ``project`` with a module call and a probe of ansible-core at collection; its own cache directory."""
    cache = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("MH_ANSIBLE_INVENTORY_CACHE", raising=False)
    project.makepyfile(test_a=TEST)
    project.makeconftest(PROBE)
    return cache / "pytest-mh-ansible" / "inventory"


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.json")) if directory.is_dir() else []


def test_inventory_cache__second_run_collects_without_ansible_and_still_runs_modules(
    project: pytest.Pytester, cached_project: Path
) -> None:
    first = project.runpytest_subprocess("-i", "hosts.ini", "-s")
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(["*ANSIBLE-AT-COLLECTION=True*"])
    assert len(entries(cached_project)) == 1
    second = project.runpytest_subprocess("-i", "hosts.ini", "-s")
    second.assert_outcomes(passed=1)  # the module call parses the inventory when it needs ansible-core
    second.stdout.fnmatch_lines(["*ANSIBLE-AT-COLLECTION=False*"])


def test_inventory_cache__off_by_option_and_a_changed_inventory_is_parsed_again(
    project: pytest.Pytester, cached_project: Path
) -> None:
    off = project.runpytest_subprocess("-i", "hosts.ini", "-s", "--mh-inventory-cache=off")
    off.assert_outcomes(passed=1)
    assert entries(cached_project) == []
    project.runpytest_subprocess("-i", "hosts.ini").assert_outcomes(passed=1)
    (project.path / "hosts.ini").write_text(
        (project.path / "hosts.ini").read_text().replace("mh_domain=app", "mh_domain=app\nx=1")
    )
    changed = project.runpytest_subprocess("-i", "hosts.ini", "-s")
    changed.assert_outcomes(passed=1)
    changed.stdout.fnmatch_lines(["*ANSIBLE-AT-COLLECTION=True*"])
    assert len(entries(cached_project)) == 2
