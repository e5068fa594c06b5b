"""Bringing labs up and down: idempotent up, labs side by side, the CLI, and nothing left behind."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from labname import lab_name

from pytest_mh_ansible._private.cli import main
from pytest_mh_ansible._private.lab import boot, registry
from pytest_mh_ansible._private.lab.process import ProcessId
from pytest_mh_ansible.errors import LabError
from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

pytestmark = pytest.mark.integration


def _leftovers(directory: Path, state: dict[str, object]) -> list[str]:
    found = []
    netns = subprocess.run(["ip", "netns", "list"], check=False, capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], check=False, capture_output=True, text=True).stdout
    for host in state["hosts"]:  # type: ignore[attr-defined]
        if host["netns"] in netns:
            found.append(f"netns {host['netns']}")
        if f" {host['veth']}@" in links or f" {host['veth']}:" in links:
            found.append(f"veth {host['veth']}")
        for key in ("launcher", "pid1"):
            proc = ProcessId(host[key]["pid"], host[key]["start"])
            if proc.alive:
                found.append(f"process {proc.pid}")
        if host["cgroup"] and Path(host["cgroup"]).exists():
            found.append(f"cgroup {host['cgroup']}")
    if f" {state['bridge']}:" in links:
        found.append(f"bridge {state['bridge']}")
    if state["cgroup"] and Path(str(state["cgroup"])).exists():
        found.append(f"cgroup {state['cgroup']}")
    mounts = Path("/proc/self/mountinfo").read_text()
    if str(directory) in mounts:
        found.append("mounts under the lab dir")
    if directory.exists():
        found.append(f"directory {directory}")
    return found


def _cgroup_roots() -> dict[str, set[str]]:
    """The directories at the root of every machine-wide cgroup hierarchy."""
    roots = {}
    own = "pytest-mh-ansible." + lab_name("mhlabd")
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] in ("cgroup", "cgroup2"):
            point = Path(left.split()[4])
            # other sessions' labs may come and go meanwhile: only this test's lab and foreign names count
            roots[str(point)] = {
                p.name
                for p in point.iterdir()
                if p.is_dir() and (not p.name.startswith("pytest-mh-ansible.") or p.name == own)
            }
    return roots


def test_lab__up_is_idempotent_coexists_and_down_leaves_nothing(lab: Lab, lab_root: Path) -> None:
    cgroups_before = _cgroup_roots()
    spec = LabSpec(
        name=lab_name("mhlabd"),
        hosts=(LabHostSpec("one", roles=("client",)), LabHostSpec("two", roles=("server",), init="systemd")),
    )
    second = Lab(spec, lab_root / "mhlabd")
    try:
        second.up()
        first_pids = [h.pid for h in second.status()]
        assert second.is_up
        assert all(first_pids)
        started = time.monotonic()
        second.up()
        assert time.monotonic() - started < 0.5
        assert [h.pid for h in second.status()] == first_pids
        # both labs run side by side, on different subnets and bridges
        assert lab.is_up
        assert {h.address.rsplit(".", 1)[0] for h in lab.status()}.isdisjoint(
            {h.address.rsplit(".", 1)[0] for h in second.status()}
        )
        reopened = Lab.from_directory(second.directory)
        assert [h.pid for h in reopened.status()] == first_pids
        state = json.loads((second.directory / "state.json").read_text())
        # systemd stays inside its own cgroup subtree: the machine's v1 hierarchies get nothing new
        during = _cgroup_roots()
        for point, names in during.items():
            new = names - cgroups_before[point]
            if new:
                assert new <= {f"pytest-mh-ansible.{spec.name}"}, (point, new)
                assert "cgroup2" in Path("/proc/self/mountinfo").read_text()
    finally:
        second.down()
    assert _leftovers(second.directory, state) == []
    assert _cgroup_roots() == cgroups_before
    assert Path("/proc/sys/net/ipv4/ip_forward").read_text().strip() == "0"
    assert lab.is_up  # the other lab is untouched
    second.down()  # twice is harmless


def test_cli__up_status_inventory_down(lab_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = lab_name("mhlabc")
    directory = lab_root / name
    spec_file = lab_root / "mhlabc.yml"
    spec_file.write_text(f"name: {name}\nhosts:\n  - {{name: web1, roles: [web]}}\n")
    (lab_root / "group_vars").mkdir()
    (lab_root / "group_vars" / "web.yml").write_text("web_port: 8080\n")
    try:
        assert main(["lab", "up", "--spec", str(spec_file), "--dir", str(directory), "--host", "web1:web"]) == 0
        assert "is up in" in capsys.readouterr().out
        pids = [h.pid for h in Lab.from_directory(directory).status()]
        assert main(["lab", "up", "--dir", str(directory)]) == 0  # alone: the recorded lab, left as it is
        assert [h.pid for h in Lab.from_directory(directory).status()] == pids
        capsys.readouterr()
        assert main(["lab", "status", "--dir", str(directory)]) == 0
        table = capsys.readouterr().out
        assert table.splitlines()[0].split() == ["HOST", "ROLES", "ADDRESS", "INIT", "PID", "RUNNING"]
        assert table.splitlines()[1].split()[-1] == "yes"
        assert main(["lab", "inventory", "--dir", str(directory)]) == 0
        inventory = capsys.readouterr().out.strip()
        assert inventory == str(directory / "hosts.yml")
        assert (directory / "group_vars" / "web.yml").exists()
        out = subprocess.run(
            [str(Path(sys.executable).with_name("ansible-inventory")), "-i", inventory, "--host", "web1"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert json.loads(out)["web_port"] == 8080
        state = json.loads((directory / "state.json").read_text())
    finally:
        assert main(["lab", "down", "--dir", str(directory)]) == 0
    assert _leftovers(directory, state) == []
    assert main(["lab", "status", "--dir", str(directory)]) == 1


def _sshd_processes(lab: Lab) -> list[ProcessId]:
    """The machine's view of every sshd running inside the lab's hosts (their PID namespaces)."""
    found = []
    for host in lab.status():
        namespace = os.readlink(f"/proc/{host.pid}/ns/pid")
        for proc in Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                if (
                    proc.name.isdigit()
                    and (proc / "comm").read_text().strip() == "sshd"
                    and os.readlink(proc / "ns" / "pid") == namespace
                ):
                    found.append(ProcessId.of(int(proc.name)))
    return found


def test_cli__down_by_name_finds_a_lab_brought_up_in_any_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``lab up --dir D`` then ``lab down --name N`` (no --dir): the registry says where N lives."""
    name = lab_name("mhlabr")
    directory = tmp_path / "somewhere" / "else"
    try:
        assert main(["lab", "up", "--name", name, "--dir", str(directory), "--host", "r1:client"]) == 0
        assert registry.lookup(name) == directory
        lab = Lab.from_directory(directory)
        state = json.loads((directory / "state.json").read_text())
        sshd = _sshd_processes(lab)
        assert sshd
        assert all(p.alive for p in sshd)
        capsys.readouterr()
        assert main(["lab", "status"]) == 0  # no name: every lab that is up
        rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:]}
        assert rows[name] == [name, "1", "1", str(directory)]
        assert main(["lab", "inventory", "--name", name]) == 0
        assert capsys.readouterr().out.strip() == str(directory / "hosts.yml")
        assert main(["lab", "down", "--name", name]) == 0
        assert f"lab {name!r} is down" in capsys.readouterr().out
    finally:
        if directory.exists():
            main(["lab", "down", "--dir", str(directory)])
    assert _leftovers(directory, state) == []
    assert not any(p.alive for p in sshd)
    assert not Path(f"/run/netns/{state['hosts'][0]['netns']}").exists()
    assert registry.lookup(name) is None
    assert main(["lab", "down", "--name", name]) == 0  # twice: nothing to do
    assert "nothing to do" in capsys.readouterr().out


def test_lab__name_up_elsewhere_is_refused_naming_the_directory(lab: Lab, lab_root: Path) -> None:
    twin = Lab(LabSpec(name=lab.spec.name, hosts=(LabHostSpec("h1"),)), lab_root / "twin")
    with pytest.raises(LabError, match=rf"lab {lab.spec.name!r} is already up in {lab.directory}: bring it down"):
        twin.up()
    assert not twin.directory.exists()
    assert lab.is_up


def test_lab__refuses_a_subnet_in_use(lab: Lab, lab_root: Path) -> None:
    taken = lab.status()[0].address.rsplit(".", 1)[0] + ".0/24"
    clash = Lab(LabSpec(name=lab_name("mhlabs"), hosts=(LabHostSpec("h1"),), subnet=taken), lab_root / "mhlabs")
    with pytest.raises(LabError, match=rf"subnet '{taken}' is taken on this machine"):
        clash.up()
    assert not clash.directory.exists()
    assert lab.is_up


def test_lab__host_that_fails_to_boot_is_reported_and_cleaned_up(
    lab_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(boot, "sshd_config", lambda **_: "NoSuchOption yes\n")
    broken = Lab(LabSpec(name=lab_name("mhlabf"), hosts=(LabHostSpec("h1"),)), lab_root / "mhlabf")
    started = time.monotonic()
    with pytest.raises(LabError, match=r"host 'h1' \(10\.213\.\d+\.11\) did not come up: its PID 1 exited") as info:
        broken.up()
    assert time.monotonic() - started < 5
    assert "NoSuchOption" in str(info.value)  # the console log's tail names the cause
    assert not broken.directory.exists()
    assert not Path(f"/run/netns/pytest-mh-ansible.{broken.spec.name}.h1").exists()
    assert not Path("/sys/class/net", broken.names.bridge).exists()


def test_cli__entry_point_runs_as_module() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_mh_ansible._private.cli", "lab", "up", "--host", "Bad_Name"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "lab host name 'Bad_Name' is invalid" in proc.stderr


def test_lab__up_with_another_spec_refuses_unless_told_to_replace(lab: Lab) -> None:
    """A running lab is its hosts and their files: another spec under its name does not wipe it silently."""
    hosts = (*lab.spec.hosts, LabHostSpec("extra1"))
    other = Lab(dataclasses.replace(lab.spec, hosts=hosts), lab.directory)
    marker = "echo kept > /root/mh-kept"
    assert lab.run_inside(lab.spec.hosts[0].name, marker).returncode == 0
    with pytest.raises(LabError, match=rf"lab {lab.spec.name!r} is up with another spec \(it differs in hosts\)"):
        other.up()
    assert lab.is_up
    assert lab.run_inside(lab.spec.hosts[0].name, "cat /root/mh-kept").stdout == "kept\n"
