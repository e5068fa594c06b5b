"""pytest-mh's ``Topology`` and ``TopologyDomain``: this project's value classes with pytest-mh's lookups and text."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from .. import Topology as _Topology
from .. import TopologyDomain as _TopologyDomain

__all__ = ["Topology", "TopologyDomain"]


class TopologyDomain(_TopologyDomain):
    """pytest-mh's ``TopologyDomain(id, **roles)``: ``get`` of a role it lacks raises ``KeyError``.

    ``str()`` gives the exported dict, as pytest-mh prints it; equality compares the export, so
    a domain of this project and one of the layer with the same roles are equal.

    Example::

        domain = TopologyDomain("test", client=1, ldap=1)
        str(domain)      # "{'id': 'test', 'hosts': {'client': 1, 'ldap': 1}}"
        domain.get("ad") # KeyError
    """

    def __init__(self, id: str, **kwargs: int) -> None:
        super().__init__(id, **kwargs)

    def get(self, role: str) -> int:
        """How many hosts of ``role`` the domain needs.

        :raises KeyError: The domain has no such role (this project's own class answers 0).
        """
        return self.roles[role]

    def __str__(self) -> str:
        return str(self.export())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _TopologyDomain):
            return NotImplemented
        return self.export() == other.export()

    def __hash__(self) -> int:
        return super().__hash__()


class Topology(_Topology):
    """pytest-mh's ``Topology(*domains)``: ``domains`` is a list, ``str()`` the exported list.

    Example::

        topology = Topology(TopologyDomain("test", client=1), TopologyDomain("ad", dc=1))
        "ad" in topology            # True
        topology.get("ipa")         # KeyError: 'Domain "ipa" was not found.'
        Topology.FromMultihostConfig(yaml.safe_load(open("mhc.yaml")))
    """

    def __init__(self, *domains: _TopologyDomain) -> None:
        super().__init__(*domains)
        self.domains: list[_TopologyDomain] = list(domains)  # pytest-mh keeps a list

    def get(self, id: str) -> _TopologyDomain:
        """The domain ``id``.

        :raises KeyError: The topology has no such domain.
        """
        for domain in self.domains:
            if domain.id == id:
                return domain
        raise KeyError(f'Domain "{id}" was not found.')

    def __str__(self) -> str:
        return str(self.export())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Topology):
            return NotImplemented
        return self.export() == other.export()

    def __hash__(self) -> int:
        return super().__hash__()

    @classmethod
    def FromMultihostConfig(cls, mhc: Mapping[str, Any] | None) -> Topology:
        """The topology that a host file (``mhc.yaml`` as a dict) provides: hosts counted per domain and role.

        A domain without an ``id`` is ``default``; ``None`` gives the empty topology.
        """
        if mhc is None:
            return cls()
        domains: list[_TopologyDomain] = []
        for domain in mhc.get("domains") or []:
            hosts: Iterable[Mapping[str, Any]] = domain.get("hosts") or []
            counts = Counter(str(host["role"]) for host in hosts)
            domains.append(TopologyDomain(str(domain.get("id", "default")), **counts))
        return cls(*domains)
