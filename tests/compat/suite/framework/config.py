"""The framework's configuration classes: one domain class, host and role classes per role."""

from __future__ import annotations

from typing import Any

from pytest_mh import MultihostConfig, MultihostDomain

from .hosts import ClientHost, ServerHost
from .roles import Client, Server


class ExampleMultihostConfig(MultihostConfig):
    @property
    def id_to_domain_class(self) -> dict[str, Any]:
        return {"*": ExampleMultihostDomain}


class ExampleMultihostDomain(MultihostDomain[ExampleMultihostConfig]):
    @property
    def role_to_host_class(self) -> dict[str, Any]:
        return {"client": ClientHost, "server": ServerHost}

    @property
    def role_to_role_class(self) -> dict[str, Any]:
        return {"client": Client, "server": Server}
