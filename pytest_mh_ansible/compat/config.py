"""pytest-mh's configuration classes: ``MultihostConfig`` and ``MultihostDomain``, built from the inventory.

pytest-mh reads ``mhc.yaml``; here the same ``confdict`` is made from the Ansible inventory
(``convert-mhc`` writes one from an ``mhc.yaml``): each host's domain is its ``mh_domain``, its
role its ``mh_role`` variable (else its first group), its ``config`` the ``mh_config`` variable;
a domain's ``config`` is ``mh_domain_config`` and the top-level ``config`` is ``mh_multihost_config``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .. import MultihostError, TopologyMark
from .host import MultihostHost
from .logger import MultihostLogger, logger_for
from .role import MultihostRole

if TYPE_CHECKING:
    from .. import MultihostFixture, Topology

__all__ = ["MultihostConfig", "MultihostDomain", "MultihostPlugin", "confdict_from_inventory"]

ConfigT = TypeVar("ConfigT", bound="MultihostConfig")


class MultihostConfig:
    """pytest-mh's session configuration: the domains, and the domain class of each domain id.

    Subclasses implement :attr:`id_to_domain_class` (``"*"`` matches any id) and are made known
    as in pytest-mh::

        def pytest_plugin_registered(plugin):
            if isinstance(plugin, MultihostPlugin):
                plugin.config_class = MyConfig
    """

    def __init__(
        self,
        confdict: dict[str, Any],
        *,
        logger: MultihostLogger | None = None,
        lazy_ssh: bool = True,
        artifacts_dir: str = "artifacts",
        artifacts_mode: str = "on-failure",
        artifacts_compression: bool = False,
    ) -> None:
        self.confdict = confdict
        self.config: dict[str, Any] = dict(confdict.get("config") or {})
        self.logger: MultihostLogger = logger or logger_for("config")
        self.lazy_ssh = lazy_ssh
        self.artifacts_dir = artifacts_dir
        self.artifacts_mode = artifacts_mode
        self.artifacts_compression = artifacts_compression
        self.domains: list[MultihostDomain[Any]] = [self.create_domain(d) for d in confdict.get("domains") or []]

    @property
    def required_fields(self) -> list[str]:
        """Kept for subclasses that extend it; this layer does not validate fields."""
        return ["domains"]

    @property
    def TopologyMarkClass(self) -> type[TopologyMark]:
        return TopologyMark

    @property
    def id_to_domain_class(self) -> dict[str, type[MultihostDomain[Any]]]:
        """Domain class per domain id; ``"*"`` for every other id (override)."""
        return {"*": MultihostDomain}

    def create_domain(self, domain: dict[str, Any]) -> MultihostDomain[Any]:
        classes = self.id_to_domain_class
        cls = classes.get(str(domain["id"]), classes.get("*"))
        if cls is None:
            raise MultihostError(f"{type(self).__name__}.id_to_domain_class: no class for domain {domain['id']!r}")
        return cls(self, domain)

    def domain(self, id: str) -> MultihostDomain[Any]:
        for domain in self.domains:
            if domain.id == id:
                return domain
        raise MultihostError(f"no domain {id!r} in the inventory (domains: {', '.join(d.id for d in self.domains)})")

    def topology_hosts(self, topology: Topology) -> list[MultihostHost[Any]]:
        """The hosts made so far that belong to ``topology``'s domains and roles."""
        return [
            host
            for domain in self.domains
            if domain.id in topology
            for host in domain.hosts
            if topology.get(domain.id).get(host.role)
        ]


class MultihostDomain(Generic[ConfigT]):
    """pytest-mh's domain: its hosts and the host and role classes of each role.

    Subclasses implement :attr:`role_to_host_class` and :attr:`role_to_role_class` (``"*"`` matches
    any role). Hosts are made when the session first needs them, not when the domain is made.
    """

    def __init__(self, config: ConfigT, confdict: dict[str, Any]) -> None:
        self.mh_config = config
        self.confdict = confdict
        self.id: str = str(confdict["id"])
        self.config: dict[str, Any] = dict(confdict.get("config") or {})
        self.logger = config.logger
        self.hosts: list[MultihostHost[Any]] = []
        self._mh_inventory: dict[str, tuple[tuple[str, ...], Mapping[str, Any]]] = dict(
            confdict.get("_mh_inventory") or {}
        )

    @property
    def required_fields(self) -> list[str]:
        return ["id", "hosts"]

    @property
    def roles(self) -> list[str]:
        return sorted({str(host["role"]) for host in self.confdict.get("hosts") or []})

    @property
    def role_to_host_class(self) -> dict[str, type[MultihostHost[Any]]]:
        """Host class per role; ``"*"`` for every other role (override)."""
        return {"*": MultihostHost}

    @property
    def role_to_role_class(self) -> dict[str, type[MultihostRole[Any]]]:
        """Role class per role; ``"*"`` for every other role (override)."""
        return {"*": MultihostRole}

    def host_confdict(self, hostname: str) -> dict[str, Any]:
        for host in self.confdict.get("hosts") or []:
            if host["hostname"] == hostname:
                return dict(host)
        raise MultihostError(f"domain {self.id!r} has no host {hostname!r}")

    def create_host(self, confdict: dict[str, Any]) -> MultihostHost[Any]:
        classes = self.role_to_host_class
        cls = classes.get(str(confdict["role"]), classes.get("*", MultihostHost))
        return cls(self, confdict)

    def create_role(self, mh: MultihostFixture, host: MultihostHost[Any]) -> MultihostRole[Any]:
        classes = self.role_to_role_class
        cls = classes.get(host.role, classes.get("*"))
        if cls is None:
            raise MultihostError(
                f"{type(self).__name__}.role_to_role_class: no class for role {host.role!r} (host {host.hostname!r})"
            )
        return cls(mh, host.role, host)

    def hosts_by_role(self, role: str) -> list[MultihostHost[Any]]:
        return [host for host in self.hosts if host.role == role]


class MultihostPlugin:
    """Stands for pytest-mh's plugin object, so that ``pytest_plugin_registered`` can set ``config_class``."""

    def __init__(self) -> None:
        self.config_class: type[MultihostConfig] | None = None


def confdict_from_inventory(
    hosts: list[tuple[str, tuple[str, ...], str, Mapping[str, Any]]],
) -> dict[str, Any]:
    """The ``mhc.yaml`` dict pytest-mh would read, from ``(name, roles, domain, variables)`` per host.

    A host's role is its ``mh_role`` variable, else its first role (group) that is not its domain.
    The inventory data of each host rides along under the private key ``_mh_inventory``.
    """
    domains: dict[str, dict[str, Any]] = {}
    top: dict[str, Any] = {}
    for name, roles, domain, variables in hosts:
        entry = domains.get(domain)
        if entry is None:
            entry = domains[domain] = {
                "id": domain,
                "config": dict(variables.get("mh_domain_config") or {}),
                "hosts": [],
                "_mh_inventory": {},
            }
        if not top and variables.get("mh_multihost_config"):
            top = dict(variables["mh_multihost_config"])
        role = variables.get("mh_role")
        if isinstance(role, list | tuple):
            role = role[0] if role else None
        if not role:
            candidates = [r for r in roles if r not in (domain, f"{domain}_domain", "all", "ungrouped")]
            role = candidates[0] if candidates else "default"
        host: dict[str, Any] = {"hostname": name, "role": str(role)}
        if variables.get("mh_config"):
            host["config"] = dict(variables["mh_config"])
        if variables.get("mh_artifacts"):
            host["artifacts"] = variables["mh_artifacts"]
        host["os"] = {"family": str(variables.get("mh_os_family") or "linux")}
        entry["hosts"].append(host)
        entry["_mh_inventory"][name] = (roles, variables)
    return {"config": top, "domains": list(domains.values())}
