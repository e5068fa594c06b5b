"""A lab shaped like a pytest-mh host file: its hosts by their names and roles, and the file again, pointing at them."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from pytest_mh_ansible._private.mhc import convert_mhc
from pytest_mh_ansible.errors import LabError

__all__ = ["lab_mhc", "mhc_hosts"]

# What convert-mhc writes to reach a host: the lab's inventory has its own way there.
_CONNECTION_VARS: Final = frozenset(
    {
        "ansible_connection",
        "ansible_host",
        "ansible_port",
        "ansible_user",
        "ansible_password",
        "ansible_ssh_private_key_file",
        "ansible_ssh_common_args",
        "ansible_host_key_checking",
    }
)
# Variables a domain group and the ``all`` group of the converted inventory set, carried as host variables.
_GROUP_VARS: Final = ("mh_domain", "mh_domain_config", "mh_domain_keys", "mh_multihost_config", "mh_multihost_keys")


def _short_name(fqdn: str, taken: set[str]) -> str:
    """A DNS label naming the host inside the lab (netns, directory): the first label, the next ones on a clash."""
    labels = [re.sub(r"[^a-z0-9-]", "-", label) for label in fqdn.lower().split(".") if label]
    for count in range(1, len(labels) + 1):
        candidate = "-".join(labels[:count]).strip("-")[:63].rstrip("-")
        if candidate and not candidate[0].isalpha():
            candidate = f"h{candidate}"[:63]
        if candidate and candidate not in taken and candidate not in ("localhost", "all", "ungrouped"):
            return candidate
    base = (labels[0] if labels else "host")[:58]
    index = 2
    while f"{base}-{index}" in taken:
        index += 1
    return f"{base}-{index}"


def mhc_hosts(data: Any, *, source: str) -> list[dict[str, Any]]:
    """The lab hosts of a pytest-mh host file, as ``hosts`` entries of a lab spec (one per host entry).

    Each gets the file's ``hostname`` as its ``fqdn``, its ``role`` as its role, a short name made from the
    first label, and the variables ``convert-mhc`` gives it (``mh_role``, ``mh_domain``, ``mh_config``,
    ``mh_artifacts``, ...) except the connection's: the lab's inventory reaches its hosts by itself.

    :raises LabError: The file is not a pytest-mh host file, or names a host the lab cannot make.
    """
    try:
        inventory = convert_mhc(data, source=source).inventory["all"]
    except ValueError as err:
        raise LabError(str(err)) from None
    top = dict(inventory.get("vars") or {})
    hosts: list[dict[str, Any]] = []
    taken: set[str] = set()
    for group in inventory["children"].values():
        group_vars = group.get("vars") or {}
        if "mh_domain" not in group_vars:
            continue
        for fqdn, hostvars in group["hosts"].items():
            if hostvars.get("mh_os_family", "linux") != "linux":
                raise LabError(f"{source}: host {fqdn!r} is a {hostvars['mh_os_family']} host; lab hosts are Linux")
            variables = {k: v for k, v in hostvars.items() if k not in _CONNECTION_VARS}
            variables.update({k: v for k, v in (top | group_vars).items() if k in _GROUP_VARS})
            short = _short_name(fqdn, taken)
            taken.add(short)
            hosts.append({"name": short, "fqdn": fqdn.lower(), "roles": [str(hostvars["mh_role"])], "vars": variables})
    return hosts


def lab_mhc(mhc: Mapping[str, Any], addresses: Mapping[str, str], key_path: Path) -> dict[str, Any]:
    """The host file again, each host's ``conn`` an ssh login as root with the lab's key at its lab address.

    Everything else (``config``, ``artifacts``, a suite's own keys) is kept as the file has it, so the
    suite's framework reads what it always read; pytest-mh itself runs with the result as ``--mh-config``.

    :param addresses: Lab address by fully qualified host name (lower case).
    """
    result = copy.deepcopy(dict(mhc))
    for domain in result.get("domains") or []:
        for host in domain.get("hosts") or []:
            address = addresses.get(str(host.get("hostname", "")).lower())
            if address is None:
                continue
            host["conn"] = {"type": "ssh", "host": address, "username": "root", "private_key": str(key_path)}
    return result
