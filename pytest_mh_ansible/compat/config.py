"""pytest-mh's configuration classes: ``MultihostConfig`` and ``MultihostDomain``, built from the inventory.

pytest-mh reads ``mhc.yaml``; here the same ``confdict`` is made from the Ansible inventory
(``convert-mhc`` writes one from an ``mhc.yaml``): each host's domain is its ``mh_domain``, its
role its ``mh_role`` variable (else its first group), its ``config`` the ``mh_config`` variable;
a domain's ``config`` is ``mh_domain_config`` and the top-level ``config`` is ``mh_multihost_config``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .. import MultihostError
from ._marks import TopologyMark
from .artifacts import MultihostArtifactsMode
from .host import MultihostHost, validate_fields
from .logger import MultihostLogger, logger_for
from .role import MultihostRole

if TYPE_CHECKING:
    from .. import MultihostFixture, Topology

__all__ = ["MultihostConfig", "MultihostDomain", "confdict_from_inventory"]

ConfigT = TypeVar("ConfigT", bound="MultihostConfig")


class MultihostConfig:
    """pytest-mh's session configuration: the domains, and the domain class of each domain id.

    Subclasses implement :attr:`id_to_domain_class` (``"*"`` matches any id) and are made known
    as in pytest-mh::

        def pytest_plugin_registered(plugin):
            if isinstance(plugin, MultihostPlugin):
                plugin.config_class = MyConfig

    The plugin makes it with the run's options: ``artifacts_dir`` (``--mh-artifacts-dir``),
    ``artifacts_mode`` (``--mh-collect-artifacts``), ``artifacts_compression``
    (``--mh-compress-artifacts``) and ``lazy_ssh`` (``--mh-lazy-ssh``).

    :raises ValueError: A field of :attr:`required_fields` is missing from ``confdict``, or a
        domain has no id or no class.
    """

    def __init__(
        self,
        confdict: dict[str, Any],
        *,
        logger: MultihostLogger | None = None,
        lazy_ssh: bool = False,
        artifacts_dir: Path | str = Path("artifacts"),
        artifacts_mode: MultihostArtifactsMode = "on-failure",
        artifacts_compression: bool = False,
    ) -> None:
        validate_fields(self.required_fields, confdict, "configuration")
        self.confdict = confdict
        self.config: dict[str, Any] = confdict.get("config") or {}
        self.logger: MultihostLogger = logger if logger is not None else logger_for("config")
        self.lazy_ssh = lazy_ssh
        self.artifacts_dir = Path(artifacts_dir)
        self.artifacts_mode: MultihostArtifactsMode = artifacts_mode
        self.artifacts_compression = artifacts_compression
        self.domains: list[MultihostDomain[Any]] = []
        self._in_test = False
        self._sigint = False
        for domain in confdict["domains"]:
            self.domains.append(self.create_domain(domain))

    @property
    def required_fields(self) -> list[str]:
        """Fields ``confdict`` must have (``a/b`` for nested ones); extend it in a subclass."""
        return ["domains"]

    @property
    def TopologyMarkClass(self) -> type[TopologyMark]:
        """The topology mark class of ``@pytest.mark.topology`` (override to use a subclass)."""
        return TopologyMark

    @property
    def id_to_domain_class(self) -> dict[str, type[MultihostDomain[Any]]]:
        """Domain class per domain id; ``"*"`` for every other id (override)."""
        return {"*": MultihostDomain}

    def create_domain(self, domain: dict[str, Any]) -> MultihostDomain[Any]:
        """The domain object of ``domain`` (a confdict), of the class :attr:`id_to_domain_class` names.

        :raises ValueError: The domain has no id, or no class matches it.
        """
        domain_id = domain.get("id")
        if domain_id is None:
            raise ValueError("invalid configuration: a domain has no 'id'")
        classes = self.id_to_domain_class
        cls = classes.get(str(domain_id), classes.get("*"))
        if cls is None:
            raise ValueError(f"{type(self).__name__}.id_to_domain_class: no class for domain {domain_id!r}")
        return cls(self, domain)

    def domain(self, id: str) -> MultihostDomain[Any]:
        """The domain ``id``.

        :raises MultihostError: No such domain.
        """
        for domain in self.domains:
            if domain.id == id:
                return domain
        raise MultihostError(f"no domain {id!r} in the inventory (domains: {', '.join(d.id for d in self.domains)})")

    def topology_hosts(self, topology: Topology) -> list[MultihostHost[Any]]:
        """The hosts ``topology`` takes: per domain and role of it, the first hosts, as many as it needs."""
        found: list[MultihostHost[Any]] = []
        for domain in self.domains:
            if domain.id not in topology:
                continue
            wanted = topology.get(domain.id)
            for role in domain.roles:
                if role in wanted:
                    found.extend(domain.hosts_by_role(role)[: wanted.get(role)])
        return found


class MultihostDomain(Generic[ConfigT]):
    """pytest-mh's domain: its hosts, and the host and role classes of each role.

    Subclasses implement :attr:`role_to_host_class` and :attr:`role_to_role_class` (``"*"`` matches
    any role). The hosts are made with the domain, one per host of its ``confdict``.

    :raises ValueError: A field of :attr:`required_fields` is missing, or a host has no role.
    """

    def __init__(self, config: ConfigT, confdict: dict[str, Any]) -> None:
        validate_fields(self.required_fields, confdict, "domain configuration")
        self.confdict = confdict
        self.config: dict[str, Any] = confdict.get("config") or {}
        self.mh_config = config
        self.logger: MultihostLogger = config.logger
        self.id: str = str(confdict["id"])
        self._mh_inventory: dict[str, tuple[tuple[str, ...], Mapping[str, Any]]] = dict(
            confdict.get("_mh_inventory") or {}
        )
        self.hosts: list[MultihostHost[Any]] = []
        for host in confdict["hosts"]:
            self.hosts.append(self.create_host(host))

    @property
    def required_fields(self) -> list[str]:
        """Fields the domain's ``confdict`` must have (``a/b`` for nested ones); extend it in a subclass."""
        return ["id", "hosts"]

    @property
    def roles(self) -> list[str]:
        """The roles of the domain's hosts, sorted."""
        return sorted({host.role for host in self.hosts})

    @property
    def role_to_host_class(self) -> dict[str, type[MultihostHost[Any]]]:
        """Host class per role; ``"*"`` for every other role (override)."""
        return {"*": MultihostHost}

    @property
    def role_to_role_class(self) -> dict[str, type[MultihostRole[Any]]]:
        """Role class per role; ``"*"`` for every other role (override)."""
        return {"*": MultihostRole}

    def host_confdict(self, hostname: str) -> dict[str, Any]:
        """The ``confdict`` of host ``hostname``.

        :raises MultihostError: The domain has no such host.
        """
        for host in self.confdict.get("hosts") or []:
            if host["hostname"] == hostname:
                return dict(host)
        raise MultihostError(f"domain {self.id!r} has no host {hostname!r}")

    def create_host(self, confdict: dict[str, Any]) -> MultihostHost[Any]:
        """The host object of ``confdict``, of the class :attr:`role_to_host_class` names for its role.

        :raises ValueError: The host has no role.
        """
        role = confdict.get("role")
        if not role:
            raise ValueError('"role" property is missing in host configuration')
        classes = self.role_to_host_class
        cls = classes.get(str(role), classes.get("*", MultihostHost))
        return cls(self, confdict)

    def create_role(self, mh: MultihostFixture, host: MultihostHost[Any]) -> MultihostRole[Any]:
        """The role object of ``host`` for test ``mh``, of the class :attr:`role_to_role_class` names.

        :raises ValueError: No class matches the host's role.
        """
        classes = self.role_to_role_class
        cls = classes.get(host.role, classes.get("*"))
        if cls is None:
            raise ValueError(
                f"{type(self).__name__}.role_to_role_class: no class for role {host.role!r} (host {host.hostname!r})"
            )
        return cls(mh, host.role, host)

    def hosts_by_role(self, role: str) -> list[MultihostHost[Any]]:
        """The domain's hosts in ``role``, in configuration order."""
        return [host for host in self.hosts if host.role == role]


def confdict_from_inventory(
    hosts: list[tuple[str, tuple[str, ...], str, Mapping[str, Any]]],
) -> dict[str, Any]:
    """The ``mhc.yaml`` dict pytest-mh would read, from ``(name, roles, domain, variables)`` per host.

    A host's role is its ``mh_role`` variable, else its first role (group) that is not its domain.
    The inventory data of each host rides along under the private key ``_mh_inventory``. The host
    file's other keys, which ``convert-mhc`` keeps in ``mh_multihost_keys``, ``mh_domain_keys`` and
    ``mh_host_keys`` (a top-level ``provisioned_topologies``, say), are back where pytest-mh has them.
    """
    domains: dict[str, dict[str, Any]] = {}
    top: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for name, roles, domain, variables in hosts:
        entry = domains.get(domain)
        if entry is None:
            entry = domains[domain] = {
                "id": domain,
                "config": dict(variables.get("mh_domain_config") or {}),
                "hosts": [],
                "_mh_inventory": {},
            }
            # the host file's other keys (convert-mhc keeps them in these variables), as pytest-mh keeps them
            entry.update(dict(variables.get("mh_domain_keys") or {}))
        if not top and variables.get("mh_multihost_config"):
            top = dict(variables["mh_multihost_config"])
        extra.update(dict(variables.get("mh_multihost_keys") or {}))
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
        host.update(dict(variables.get("mh_host_keys") or {}))
        entry["hosts"].append(host)
        entry["_mh_inventory"][name] = (roles, variables)
    return {**extra, "config": top, "domains": list(domains.values())}
