"""The files a lab hands to its users: Ansible inventory, ssh_config and known_hosts, all in the lab dir."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

import yaml

from pytest_mh_ansible._private import local_files

__all__ = ["InventoryHost", "render_inventory", "render_known_hosts", "render_ssh_config", "write_private"]


@final
@dataclass(frozen=True)
class InventoryHost:
    """What the inventory says about one host.

    :param name: Its inventory name: the fully qualified name if the host has one, else its short name.
    :param alias: Its short name when ``name`` is the fully qualified one (``ssh -F`` takes either).
    """

    name: str
    address: str
    roles: tuple[str, ...]
    host_key: str
    vars: Mapping[str, Any]
    alias: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name,) if self.alias is None or self.alias == self.name else (self.alias, self.name)


def ssh_common_args(known_hosts: Path) -> str:
    """Pin the lab's host keys.

    No ``ControlPath`` here: every user of the inventory (pytest-mh-ansible's transport, a playbook
    run, ``ansible`` by hand) keeps its own multiplexing sockets, so that one closing its master
    never cuts another's session.
    """
    return f"-o UserKnownHostsFile={known_hosts} -o StrictHostKeyChecking=yes -o GlobalKnownHostsFile=/dev/null"


def render_inventory(
    *,
    lab: str,
    group: str,
    hosts: Sequence[InventoryHost],
    key_path: Path,
    known_hosts: Path,
    user: Mapping[str, str] | None,
    root_password: str | None,
) -> str:
    """An Ansible YAML inventory: one group per role, plus ``lab_<name>`` with every host."""
    common = ssh_common_args(known_hosts)
    host_entries: dict[str, dict[str, Any]] = {}
    for host in hosts:
        entry: dict[str, Any] = {
            "ansible_host": host.address,
            "ansible_user": "root",
            "ansible_ssh_private_key_file": str(key_path),
            "ansible_ssh_common_args": common,
            "ansible_ssh_pipelining": True,
            "ansible_python_interpreter": "/usr/bin/python3",
        }
        if root_password is not None:
            entry["ansible_password"] = root_password
        if user is not None:
            entry["mh_lab_user"] = user["name"]
            entry["mh_lab_user_password"] = user["password"]
            # Used when a play connects as the user (-e ansible_user=...) and becomes root.
            entry["ansible_become_password"] = user["password"]
        entry.update(host.vars)
        host_entries[host.name] = entry
    roles: dict[str, list[str]] = {}
    for host in hosts:
        for role in host.roles:
            roles.setdefault(role, []).append(host.name)
    children: dict[str, Any] = {group: {"hosts": {h.name: None for h in hosts}}}
    for role in sorted(roles):
        children[role] = {"hosts": dict.fromkeys(roles[role])}
    data = {"all": {"vars": {"mh_lab": lab}, "hosts": host_entries, "children": children}}
    header = f"# Ansible inventory of the pytest-mh-ansible lab {lab!r}; rewritten by 'lab up'.\n"
    return header + yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def render_ssh_config(hosts: Sequence[InventoryHost], *, key_path: Path, known_hosts: Path, user: str = "root") -> str:
    """``ssh -F <labdir>/ssh_config client1`` reaches a host by its lab name."""
    blocks = []
    for host in hosts:
        blocks.append(
            "\n".join(
                [
                    f"Host {' '.join(host.names)}",
                    f"    HostName {host.address}",
                    f"    User {user}",
                    f"    IdentityFile {key_path}",
                    "    IdentitiesOnly yes",
                    f"    UserKnownHostsFile {known_hosts}",
                    "    GlobalKnownHostsFile /dev/null",
                    "    StrictHostKeyChecking yes",
                    f"    HostKeyAlias {host.names[0]}",
                    "    LogLevel ERROR",
                ]
            )
        )
    return "\n\n".join(blocks) + "\n"


def render_known_hosts(hosts: Sequence[InventoryHost]) -> str:
    """Each host's key pinned by name and by address."""
    return "".join(f"{','.join(h.names)},{h.address} {h.host_key}\n" for h in hosts)


def write_private(path: Path, content: str | bytes, mode: int = 0o600) -> None:
    """Write a file that may hold secrets, never readable by others even for a moment, never through a symlink."""
    local_files.write_private(path, content, mode)
