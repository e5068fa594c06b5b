"""Lab, inventories and the pytest-mh virtualenv of ``bench/compare.py``.

* :func:`bench_lab`: brings up (or reuses) the 3-host systemd lab, installs ``blsvc.service``,
  ``/etc/bl-app.conf`` and ``/etc/bl-app.ini`` on the servers, and tears the lab down afterwards unless it was reused.
* :func:`write_inventories`: the Ansible YAML inventory (ours) and ``mhc.yaml`` (pytest-mh) for the lab,
  optionally with spare hosts in a domain ``spare`` at unused addresses of the lab's /24.
* :func:`ensure_pytest_mh_venv`: ``bench/.venv-pytest-mh`` with pytest-mh (and not pytest-mh-ansible).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml
from compare_suites import INI, INI_START, PACKAGE

from pytest_mh_ansible.lab import Lab, LabHostSpec, LabSpec

__all__ = [
    "HOSTS",
    "VENV",
    "BenchLab",
    "bench_lab",
    "contacted_spares",
    "ensure_pytest_mh_venv",
    "spare_addresses",
    "write_inventories",
]

VENV = Path(__file__).resolve().parent / ".venv-pytest-mh"
PYTEST_MH_VERSION = "1.0.30"  # the release the figures are compared against (pinned: same code in every run)

# name -> role
HOSTS: dict[str, str] = {"client1": "client", "server1": "server", "server2": "server"}

SERVICE_UNIT = """\
[Unit]
Description=pytest-mh-ansible compare bench dummy service
StartLimitIntervalSec=0

[Service]
ExecStart=/bin/sleep infinity

[Install]
WantedBy=multi-user.target
"""


class BenchLab:
    """The lab as the bench needs it: addresses, key, bridge and a way to run commands on its hosts."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        state = json.loads((lab.directory / "state.json").read_text())
        self.subnet = ipaddress.ip_network(state["subnet"])
        self.bridge: str = state["bridge"]
        self.addresses: dict[str, str] = {h.name: h.address for h in lab.hosts}
        self.key_path = Path(lab.key_path)
        self.known_hosts = Path(lab.known_hosts_path)

    def ssh(self, host: str, command: str, input: str | None = None) -> str:
        """Run ``command`` as root on ``host`` over plain OpenSSH; raise on failure."""
        args = [
            "ssh",
            "-i",
            str(self.key_path),
            "-o",
            f"UserKnownHostsFile={self.known_hosts}",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            "BatchMode=yes",
            f"root@{self.addresses[host]}",
            command,
        ]
        result = subprocess.run(args, check=False, input=input, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"{host}: {command!r} failed ({result.returncode}): {result.stderr.strip()}")
        return result.stdout


def _prepare_hosts(blab: BenchLab, hosts: Mapping[str, str] = HOSTS) -> None:
    for host, role in hosts.items():
        if role != "server":
            continue
        blab.ssh(host, "cat > /etc/systemd/system/blsvc.service", input=SERVICE_UNIT)
        blab.ssh(host, "printf 'value = 0\\n' > /etc/bl-app.conf")
        blab.ssh(host, f"cat > {INI}", input=INI_START)
        blab.ssh(
            host,
            "systemctl daemon-reload && systemctl reset-failed blsvc.service; systemctl restart blsvc.service"
            " && (userdel --remove bluser 2>/dev/null; groupdel blgroup 2>/dev/null;"
            f" DEBIAN_FRONTEND=noninteractive apt-get purge -y -q {PACKAGE} >/dev/null 2>&1; true)",
        )


def _cache_package(name: str) -> None:
    """Put ``name``'s .deb into the machine's apt cache, which the lab hosts see through their overlay of ``/``:
    the package-install row then measures the install, not a download from the mirror."""
    subprocess.run(
        ["apt-get", "install", "--download-only", "-y", "-q", "-o", "DPkg::Lock::Timeout=120", name],
        check=True,
        capture_output=True,
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
    )


@contextlib.contextmanager
def bench_lab(
    name: str,
    reuse: bool,
    keep: bool = False,
    *,
    hosts: Mapping[str, str] = HOSTS,
    cache_package: bool = True,
) -> Iterator[BenchLab]:
    """Bring the lab up (or reuse it with ``reuse``), prepare it, and bring it down at the end.

    ``hosts`` maps each host's name to its role (default: compare.py's three); every ``server`` gets
    the bench's service and config file. ``cache_package``: put :data:`PACKAGE` into apt's cache
    first (the package-install row needs it). A lab that was already up and reused is left up; so
    is every lab with ``keep``.
    """
    spec = LabSpec(
        name=name,
        init="systemd",
        hosts=tuple(LabHostSpec(host, roles=(role,)) for host, role in hosts.items()),
    )
    if cache_package:
        _cache_package(PACKAGE)
    lab = Lab(spec)
    was_up = lab.is_up
    if was_up and not reuse:
        lab.down()
        was_up = False
    lab.up()
    try:
        blab = BenchLab(lab)
        _prepare_hosts(blab, hosts)
        yield blab
    finally:
        if not keep and not (reuse and was_up):
            lab.down()


def spare_addresses(blab: BenchLab, count: int) -> list[str]:
    """``count`` addresses of the lab's /24 that no lab host uses (from the top of the range down)."""
    used = set(blab.addresses.values())
    hosts = [str(a) for a in blab.subnet.hosts()]
    # skip the lowest 10 (gateway / bridge) and the lab hosts
    free = [a for a in reversed(hosts[10:]) if a not in used]
    if len(free) < count:
        raise RuntimeError(f"the lab's subnet {blab.subnet} has only {len(free)} free addresses")
    return free[:count]


def write_inventories(
    blab: BenchLab,
    directory: Path,
    spares: int = 0,
    extra_vars: Mapping[str, Any] | None = None,
    tag: str = "",
    *,
    mh_hosts: Mapping[str, str] = HOSTS,
) -> tuple[Path, Path]:
    """Write ``hosts{tag}.yml`` (ours) and ``mhc{tag}.yaml`` (pytest-mh); return both paths.

    Ours has every host of the lab; ``mhc.yaml`` the hosts of ``mh_hosts`` (name -> role, default
    compare.py's three). ``extra_vars`` are set on every host of our inventory (connection settings);
    spare hosts, if any, are in domain ``spare`` with role ``spare`` and are never used by a topology.
    """
    directory.mkdir(parents=True, exist_ok=True)
    ours = yaml.safe_load(Path(blab.lab.inventory_path).read_text())
    all_group = ours["all"]
    if extra_vars:
        for hostvars in all_group["hosts"].values():
            hostvars.update(extra_vars)
    mh_entries: list[dict[str, Any]] = [
        {
            "hostname": host,
            "role": role,
            "conn": {
                "type": "ssh",
                "host": blab.addresses[host],
                "username": "root",
                "private_key": str(blab.key_path),
            },
        }
        for host, role in mh_hosts.items()
    ]
    domains: list[dict[str, Any]] = [{"id": "default", "hosts": mh_entries}]
    if spares:
        addresses = spare_addresses(blab, spares)
        spare_hosts: dict[str, Any] = {}
        mh_spares: list[dict[str, Any]] = []
        for n, address in enumerate(addresses):
            name = f"spare{n:03d}"
            spare_hosts[name] = {
                "ansible_host": address,
                "ansible_user": "root",
                "ansible_ssh_private_key_file": str(blab.key_path),
                "mh_domain": "spare",
            }
            mh_spares.append(
                {
                    "hostname": name,
                    "role": "spare",
                    "conn": {"type": "ssh", "host": address, "username": "root", "private_key": str(blab.key_path)},
                }
            )
        all_group.setdefault("children", {})["spare"] = {"hosts": spare_hosts}
        domains.append({"id": "spare", "hosts": mh_spares})
    ours_path = directory / f"hosts{tag}.yml"
    mh_path = directory / f"mhc{tag}.yaml"
    ours_path.write_text(yaml.safe_dump(ours, sort_keys=False))
    mh_path.write_text(yaml.safe_dump({"domains": domains}, sort_keys=False))
    return ours_path, mh_path


def contacted_spares(blab: BenchLab, spares: int) -> int:
    """How many spare addresses have a neighbour entry on the lab bridge (were ever resolved)."""
    addresses = set(spare_addresses(blab, spares))
    out = subprocess.run(
        ["ip", "-json", "neigh", "show", "dev", blab.bridge], capture_output=True, text=True, check=True
    ).stdout
    entries = json.loads(out or "[]")
    return sum(1 for entry in entries if entry.get("dst") in addresses)


def _venv_ok(python: Path) -> bool:
    if not python.exists():
        return False
    probe = (
        "import importlib.util, sys; "
        "sys.exit(0 if importlib.util.find_spec('pytest_mh') and not importlib.util.find_spec('pytest_mh_ansible')"
        " else 1)"
    )
    return subprocess.run([str(python), "-I", "-c", probe], check=False, capture_output=True, cwd="/").returncode == 0


def ensure_pytest_mh_venv(log: Any = print) -> Path:
    """The python of ``bench/.venv-pytest-mh``, created with pytest-mh from PyPI if it does not work yet."""
    python = VENV / "bin" / "python"
    if _venv_ok(python):
        return python
    log(f"creating {VENV} and installing pytest-mh from PyPI")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"pytest-mh=={PYTEST_MH_VERSION}"], check=True)
    if not _venv_ok(python):
        raise RuntimeError(f"{VENV}: pytest-mh is not importable after installation")
    return python


def tool_version(python: Path, dist: str) -> str:
    """Installed version of ``dist`` in the interpreter ``python``."""
    code = f"import importlib.metadata as m; print(m.version({dist!r}))"
    proc = subprocess.run([str(python), "-I", "-c", code], check=False, capture_output=True, text=True, cwd="/")
    return proc.stdout.strip() or "?"


def shell_join(args: list[str]) -> str:
    """A command line for logs."""
    return " ".join(shlex.quote(a) for a in args)
