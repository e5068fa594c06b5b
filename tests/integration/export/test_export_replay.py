"""The playbook export on lab hosts: a failing test's changes replayed on fresh hosts with ansible-playbook.

A failing test changes files, a user, a service, a config line, a sysctl and the firewall, and runs
a playbook. Its export is replayed (``setup.yml`` + ``changes.yml``) on a second lab of the same shape:
what changed there must be exactly what the test had changed when it failed. The export is copied
elsewhere and replayed from another directory, without this machine's collection path: it carries
the ``mh_ansible.rollback`` collection itself. ``revert.yml`` (through
``pytest-mh-ansible replay --revert``) must then bring the fresh hosts back to where they started.
States are read over plain ssh (not through the product).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent

# One line per fact: files under /etc and /home (mode, owner, type, checksum), accounts, the sysctl,
# the firewall and the service. Only what a replay should reproduce: no times, no addresses, not the
# backup copies that shadow-utils rewrites on every change (/etc/passwd- ...). /etc/shadow is compared by
# account: the labs' root passwords differ.
STATE_SCRIPT = r"""
find /etc /home -xdev \( -path /etc/ld.so.cache -o -path '/etc/*-' \) -prune -o -printf 'path %p %m %u %g %y\n' | sort
find /etc /home -xdev \( -path /etc/ld.so.cache -o -path '/etc/*-' \) -prune -o -type f -print0 | sort -z \
    | xargs -0 sha256sum | grep -v ' /etc/shadow$' | sed 's/^/sum /'
getent passwd | sed 's/^/passwd /'; getent group | sed 's/^/group /'; getent shadow | sed 's/^/shadow /'
echo "sysctl ip_forward $(cat /proc/sys/net/ipv4/ip_forward)"
nft list ruleset 2>&1 | sed 's/^/nft /'
service mh-exp status >/dev/null 2>&1; echo "service mh-exp $?"
"""

SUITE = """
import json, os, subprocess
import pytest
from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

PAIR = TopologyMark("pair", Topology(TopologyDomain("default", client=1, server=1)),
                    fixtures=dict(client="default.client[0]", server="default.server[0]"))
STATE_SCRIPT = {script!r}
INIT = (
    "#!/bin/sh\\n### BEGIN INIT INFO\\n# Provides: mh-exp\\n# Default-Start: 2 3 4 5\\n# Default-Stop: 0 1 6\\n"
    "### END INIT INFO\\ncase \\"$1\\" in start) touch /run/mh-exp;; stop) rm -f /run/mh-exp;; "
    "status) test -e /run/mh-exp;; *) ;; esac\\n"
)


def state(host):
    out = subprocess.run(["ssh", "-F", os.environ["MH_EXPORT_SSH_CONFIG"], host, STATE_SCRIPT],
                         capture_output=True, text=True, check=True).stdout
    return out


@pytest.mark.topology(PAIR)
def test_changes(client, server):
    states = {{"start": {{h: state(h) for h in ("client1", "server1")}}}}
    server.fs.mkdir("/etc/mh-exp")
    server.fs.write("/etc/mh-exp/app.conf", "password = " + server.host.vars["app_password"] + "\\nport = 1\\n")
    server.fs.write("/etc/init.d/mh-exp", INIT, mode="0755")
    server.svc.start("mh-exp")
    server.users.add("mhexp", shell="/bin/sh")
    server.config_files.line("/etc/mh-exp/app.conf", "port = 8080", regexp="^port")
    client.sysctl.set("net.ipv4.ip_forward", 1)
    client.firewall.inbound.reject_port(9999)
    client.fs.backup("/etc/mh-exp-client.txt")  # a raw command's change, reverted through the snapshot
    client.host.conn.run("echo hello > /etc/mh-exp-client.txt")
    server.playbook("play.yml", revert_paths=["/etc/mh-exp-play.conf"])
    client.host.conn.run("test -e /nonexistent", raise_on_error=False)
    states["failure"] = {{h: state(h) for h in ("client1", "server1")}}
    with open(os.environ["MH_EXPORT_STATES"], "w") as f:
        json.dump(states, f)
    assert False, "the test fails: its changes are exported"
"""

PLAY = """
- hosts: server
  gather_facts: false
  tasks:
    - ansible.builtin.copy:
        dest: /etc/mh-exp-play.conf
        content: "from a playbook\\n"
"""


def state(lab: Lab, host: str) -> dict[str, str]:
    out = subprocess.run(
        ["ssh", "-F", str(lab.ssh_config_path), host, STATE_SCRIPT], capture_output=True, text=True, check=True
    ).stdout
    return facts(out)


def facts(text: str) -> dict[str, str]:
    """``kind key rest`` lines as {"kind key": "rest"}; duplicate keys (nft lines) numbered."""
    result: dict[str, str] = {}
    for number, line in enumerate(text.splitlines()):
        kind, _, rest = line.partition(" ")
        if kind == "sum":
            digest, _, path = rest.partition("  ")
            result[f"sum {path}"] = digest
        elif kind in ("path", "service", "sysctl"):
            key, _, value = rest.rpartition(" ") if kind != "path" else rest.partition(" ")
            result[f"{kind} {key}"] = value
        elif kind in ("passwd", "group", "shadow"):
            result[f"{kind} {rest.split(':', 1)[0]}"] = rest
        else:
            result[f"{kind} {number}"] = rest
    return result


def nft(state: dict[str, str]) -> list[str]:
    return [value for key, value in state.items() if key.startswith("nft ")]


def delta(before: dict[str, str], after: dict[str, str]) -> dict[str, str | None]:
    """What changed between two states (nft rules compared as one list)."""
    changed: dict[str, str | None] = {
        key: after.get(key)
        for key in set(before) | set(after)
        if not key.startswith("nft ") and before.get(key) != after.get(key)
    }
    if nft(before) != nft(after):
        changed["nft"] = "\n".join(nft(after))
    return changed


def run(*command: str | os.PathLike[str], cwd: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        **extra_env,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "ANSIBLE_NOCOLOR": "1",
        # pytester's HOME is deep: ~/.ansible/cp would pass the 108-byte limit of a socket path
        "ANSIBLE_SSH_CONTROL_PATH_DIR": tempfile.mkdtemp(prefix="mh-replay-", dir="/tmp"),
    }
    proc = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{command} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
    return proc


def test_export__replayed_on_fresh_hosts_gives_the_failure_state(
    pytester: pytest.Pytester, export_lab: Lab, fresh_lab: Lab
) -> None:
    pytester.makeini("[pytest]\n")  # the rootdir, where play.yml is found
    pytester.makepyfile(test_suite=SUITE.format(script=STATE_SCRIPT))
    (pytester.path / "play.yml").write_text(PLAY)
    states_file = pytester.path / "states.json"
    os.environ["MH_EXPORT_SSH_CONFIG"] = str(export_lab.ssh_config_path)
    os.environ["MH_EXPORT_STATES"] = str(states_file)
    try:
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "-p", "no:randomly", f"--mh-inventory={export_lab.inventory_path}",
            "--mh-export-playbooks", "--mh-verify-rollback",
        )  # fmt: skip
    finally:
        del os.environ["MH_EXPORT_SSH_CONFIG"], os.environ["MH_EXPORT_STATES"]
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*= mh playbooks =*", "test_suite.py::test_changes[[]pair[]]: */test_changes[[]pair[]]"]
    )
    states = json.loads(states_file.read_text())
    export = pytester.path / "artifacts" / "tests" / "test_suite" / "test_changes[pair]"

    # The rollback (checked by --mh-verify-rollback too) put the hosts back where the test started.
    for host in ("client1", "server1"):
        assert delta(facts(states["start"][host]), state(export_lab, host)) == {}

    # No secret of the inventory in any exported file.
    server1 = yaml.safe_load(export_lab.inventory_path.read_text())["all"]["hosts"]["server1"]
    secret, root_password = server1["app_password"], server1["ansible_password"]
    for path in export.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            for value in (secret, root_password):
                assert value not in text, f"{path.relative_to(export)} holds a secret"

    # Point the exported inventory at the fresh hosts (what a user does to replay elsewhere).
    fresh_inventory = yaml.safe_load(fresh_lab.inventory_path.read_text())["all"]["hosts"]
    exported = yaml.safe_load((export / "inventory.yml").read_text())
    for host, variables in exported["all"]["hosts"].items():
        for key in [k for k in variables if k.startswith("ansible_")]:
            del variables[key]
        variables.update({k: v for k, v in fresh_inventory[host].items() if k.startswith("ansible_")})
    (export / "inventory.yml").write_text(yaml.safe_dump(exported))
    names = yaml.safe_load((export / "secrets.example.yml").read_text())
    origins = {
        line.split(":")[0]: line for line in (export / "secrets.example.yml").read_text().splitlines() if "#" in line
    }
    values = {
        name: (fresh_inventory["server1"]["ansible_password"] if "ansible_password" in origins[name] else secret)
        for name in names
    }
    (export / "secrets.yml").write_text(yaml.safe_dump(values))

    # The export travels: a copy elsewhere (the original gone), run from another directory, with Ansible
    # given no collection path of this machine (as on a machine without pytest-mh-ansible): the
    # mh_ansible.rollback collection comes with the export.
    copy = pytester.path / "elsewhere" / export.name  # "test_changes[pair]": brackets in the path too
    shutil.copytree(export, copy)
    shutil.rmtree(export)
    other, no_collections = pytester.path / "another-dir", pytester.path / "no-collections"
    other.mkdir()
    no_collections.mkdir()
    fresh_start = {host: state(fresh_lab, host) for host in ("client1", "server1")}
    run(
        BIN / "ansible-playbook", "-i", copy / "inventory.yml", "-e", f"@{copy / 'secrets.yml'}",
        copy / "setup.yml", copy / "changes.yml",
        cwd=other, ANSIBLE_COLLECTIONS_PATH=str(no_collections),
    )  # fmt: skip
    for host in ("client1", "server1"):
        wanted = delta(facts(states["start"][host]), facts(states["failure"][host]))
        assert wanted, f"the test changed nothing on {host}?"
        assert delta(fresh_start[host], state(fresh_lab, host)) == wanted, host

    proc = run(BIN / "pytest-mh-ansible", "replay", copy, "--revert", "--secrets", copy / "secrets.yml", cwd=other)
    assert "revert.yml: ok=" in proc.stdout
    for host in ("client1", "server1"):
        assert delta(fresh_start[host], state(fresh_lab, host)) == {}, host
