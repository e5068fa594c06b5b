"""The replica domain: which host and role classes serve each role of the host file."""

from __future__ import annotations

from typing import Any

from pytest_mh import MultihostDomain

from .config import ReplicaMultihostConfig
from .hosts.client import ClientHost
from .hosts.server import ServerHost
from .roles.client import Client
from .roles.server import Server


class ReplicaMultihostDomain(MultihostDomain[ReplicaMultihostConfig]):
    @property
    def role_to_host_class(self) -> dict[str, Any]:
        return {"client": ClientHost, "server": ServerHost}

    @property
    def role_to_role_class(self) -> dict[str, Any]:
        return {"client": Client, "server": Server}
