"""The framework's MultihostConfig: every domain of the host file is a replica domain."""

from __future__ import annotations

from typing import Any

from pytest_mh import MultihostConfig


class ReplicaMultihostConfig(MultihostConfig):
    @property
    def id_to_domain_class(self) -> dict[str, Any]:
        from .domain import ReplicaMultihostDomain

        return {"*": ReplicaMultihostDomain}
