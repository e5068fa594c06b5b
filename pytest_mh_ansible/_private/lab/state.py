"""The lab's recorded state (``state.json``): everything ``down`` needs to undo exactly what ``up`` did."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, final

from pytest_mh_ansible._private.lab.inventory import write_private
from pytest_mh_ansible._private.lab.process import ProcessId
from pytest_mh_ansible.errors import LabError

__all__ = ["STATE_FILE", "HostState", "LabState"]

STATE_FILE = "state.json"
_VERSION = 1


@final
@dataclass(frozen=True)
class HostState:
    """One host as started: where it lives and which processes are its."""

    name: str
    roles: tuple[str, ...]
    address: str
    init: str
    netns: str
    veth: str
    launcher: ProcessId | None = None
    pid1: ProcessId | None = None
    cgroup: str | None = None
    fqdn: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["roles"] = list(self.roles)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HostState:
        def pid(value: dict[str, int] | None) -> ProcessId | None:
            return None if value is None else ProcessId(value["pid"], value["start"])

        return cls(
            name=data["name"],
            roles=tuple(data["roles"]),
            address=data["address"],
            init=data["init"],
            netns=data["netns"],
            veth=data["veth"],
            launcher=pid(data.get("launcher")),
            pid1=pid(data.get("pid1")),
            cgroup=data.get("cgroup"),
            fqdn=data.get("fqdn"),
        )


@final
@dataclass(frozen=True)
class LabState:
    """The whole lab: spec (as given), subnet, bridge, lab cgroup and hosts."""

    name: str
    spec: dict[str, Any]
    subnet: str
    bridge: str
    hosts: tuple[HostState, ...] = ()
    cgroup: str | None = None
    control_dir: str | None = None
    secrets: dict[str, str] = field(default_factory=dict)

    def save(self, directory: Path) -> None:
        data = {
            "version": _VERSION,
            "name": self.name,
            "spec": self.spec,
            "subnet": self.subnet,
            "bridge": self.bridge,
            "cgroup": self.cgroup,
            "control_dir": self.control_dir,
            "secrets": self.secrets,
            "hosts": [h.to_json() for h in self.hosts],
        }
        tmp = directory / (STATE_FILE + ".tmp")
        write_private(tmp, json.dumps(data, indent=2) + "\n")
        tmp.replace(directory / STATE_FILE)

    @classmethod
    def load(cls, directory: Path) -> LabState:
        path = directory / STATE_FILE
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError as err:
            raise LabError(f"{directory}: no lab here (no {STATE_FILE}); bring one up with 'lab up'") from err
        except (OSError, ValueError) as err:
            raise LabError(f"{path}: cannot read the lab state: {err}") from err
        if data.get("version") != _VERSION:
            raise LabError(f"{path}: lab state version {data.get('version')!r} is not supported (want {_VERSION})")
        return cls(
            name=data["name"],
            spec=data["spec"],
            subnet=data["subnet"],
            bridge=data["bridge"],
            cgroup=data.get("cgroup"),
            control_dir=data.get("control_dir"),
            secrets=data.get("secrets", {}),
            hosts=tuple(HostState.from_json(h) for h in data["hosts"]),
        )
