"""What a lab should look like: its name, hosts, roles, init system, subnet, packages and users."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, cast, final

import yaml

from pytest_mh_ansible.errors import LabError

__all__ = ["INIT_SYSTEMS", "LabHostSpec", "LabSpec", "LabUserSpec", "parse_host_option"]

InitSystem = Literal["sysv", "systemd"]
INIT_SYSTEMS: Final = ("sysv", "systemd")

# Lab names end up in interface, netns, cgroup and Ansible group names, so they stay short and plain.
_LAB_NAME_RE: Final = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
# Host names must be valid DNS labels: other hosts resolve them through /etc/hosts.
_HOST_NAME_RE: Final = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
# Roles become Ansible group names, which Ansible wants to be valid Python identifiers.
_ROLE_RE: Final = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
_USER_RE: Final = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
# A host's fully qualified name (pytest-mh suites address hosts as client.test): DNS labels joined by
# dots, at most 64 characters (the kernel's HOST_NAME_MAX, as it becomes the host's hostname).
_FQDN_RE: Final = re.compile(r"^(?=.{1,64}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")
_RESERVED_HOSTS: Final = frozenset({"localhost", "all", "ungrouped"})
MAX_HOSTS: Final = 200


@final
@dataclass(frozen=True)
class LabUserSpec:
    """A non-root user created in every host, with a generated password (for ``become`` tests).

    :param name: The login name.
    :param sudo: Whether the user may use sudo.
    :param nopasswd: Whether sudo asks no password (``NOPASSWD``); by default it asks the user's own.
    :param password: The password; generated when the lab comes up if not given.
    """

    name: str = "labuser"
    sudo: bool = True
    nopasswd: bool = False
    password: str | None = None

    def __post_init__(self) -> None:
        if not _USER_RE.match(self.name) or self.name == "root":
            raise LabError(f"lab user name {self.name!r} is invalid: use a lower-case login name other than 'root'")

    @classmethod
    def from_value(cls, value: object) -> LabUserSpec | None:
        """Read the spec's ``user`` entry: a name, a mapping, or ``null``/``false`` for none."""
        if value is None or value is False:
            return None
        if isinstance(value, str):
            return cls(name=value)
        if isinstance(value, Mapping):
            unknown = set(value) - {"name", "sudo", "nopasswd", "password"}
            if unknown:
                raise LabError(f"lab user: unknown keys {sorted(unknown)!r} (known: name, sudo, nopasswd, password)")
            return cls(
                name=str(value.get("name", "labuser")),
                sudo=bool(value.get("sudo", True)),
                nopasswd=bool(value.get("nopasswd", False)),
                password=None if value.get("password") is None else str(value["password"]),
            )
        raise LabError(f"lab user: expected a name or a mapping, got {value!r}")


@final
@dataclass(frozen=True)
class LabHostSpec:
    """One host of a lab.

    :param name: Short host name: names the host's network namespace and directory; its hostname, inventory
        name and name in the other hosts' /etc/hosts unless ``fqdn`` is given.
    :param roles: Roles, written as Ansible groups of the inventory.
    :param init: ``sysv`` or ``systemd``; ``None`` takes the lab's.
    :param vars: Extra host variables for the inventory (``mh_domain``, ...).
    :param fqdn: A fully qualified name such as ``client.test``: then the host's hostname and inventory name,
        and what every host of the lab resolves it by (its short name too).
    """

    name: str
    roles: tuple[str, ...] = ()
    init: InitSystem | None = None
    vars: Mapping[str, Any] = field(default_factory=dict)
    fqdn: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _HOST_NAME_RE.match(self.name) or self.name in _RESERVED_HOSTS:
            raise LabError(
                f"lab host name {self.name!r} is invalid: use a DNS label (lower-case letters, digits, '-', "
                "starting with a letter), not 'localhost'"
            )
        object.__setattr__(self, "roles", tuple(self.roles))
        for role in self.roles:
            if not isinstance(role, str) or not _ROLE_RE.match(role):
                raise LabError(
                    f"lab host {self.name!r}: role {role!r} is invalid: roles are Ansible group names "
                    "(lower-case letters, digits, '_', starting with a letter)"
                )
        if self.init is not None and self.init not in INIT_SYSTEMS:
            raise LabError(f"lab host {self.name!r}: init {self.init!r} is invalid, use one of {INIT_SYSTEMS}")
        if not isinstance(self.vars, Mapping):
            raise LabError(f"lab host {self.name!r}: vars must be a mapping, got {self.vars!r}")
        object.__setattr__(self, "vars", dict(self.vars))
        if self.fqdn is not None and (not isinstance(self.fqdn, str) or not _FQDN_RE.match(self.fqdn)):
            raise LabError(
                f"lab host {self.name!r}: fqdn {self.fqdn!r} is invalid: use lower-case DNS labels joined by dots, "
                "at most 64 characters (e.g. client.test)"
            )

    @property
    def hostname(self) -> str:
        """The name the host calls itself and is called by: its ``fqdn``, else its short name."""
        return self.fqdn or self.name

    @classmethod
    def from_value(cls, value: object) -> LabHostSpec:
        """Read one ``hosts`` entry: a mapping, or ``name`` / ``name:role1,role2`` as on the command line."""
        if isinstance(value, str):
            return parse_host_option(value)
        if not isinstance(value, Mapping):
            raise LabError(f"lab host entry {value!r}: expected a mapping with 'name' and 'roles'")
        unknown = set(value) - {"name", "roles", "init", "vars", "fqdn"}
        if unknown:
            raise LabError(f"lab host {value.get('name')!r}: unknown keys {sorted(unknown)!r}")
        if "name" not in value:
            raise LabError(f"lab host entry {dict(value)!r} has no 'name'")
        roles = value.get("roles", ())
        if isinstance(roles, str):
            roles = (roles,)
        if not isinstance(roles, Sequence):
            raise LabError(f"lab host {value['name']!r}: roles must be a list, got {roles!r}")
        return cls(
            name=value["name"],
            roles=tuple(roles),
            init=value.get("init"),
            vars=value.get("vars") or {},
            fqdn=None if value.get("fqdn") is None else str(value["fqdn"]),
        )


def parse_host_option(text: str) -> LabHostSpec:
    """Parse a command-line host, ``client1:client`` or ``server1:server,web`` (roles optional)."""
    name, _, roles = text.partition(":")
    return LabHostSpec(name=name.strip(), roles=tuple(r.strip() for r in roles.split(",") if r.strip()))


@final
@dataclass(frozen=True)
class LabSpec:
    """The whole lab, as given by the user (YAML file, command line or Python).

    Example::

        spec = LabSpec(
            name="webapp",
            hosts=[LabHostSpec("client1", roles=("client",)), LabHostSpec("server1", roles=("server",))],
            packages=("nginx",),
        )
        with Lab(spec) as lab:
            print(lab.inventory_path)

    :param name: Lab name; names the lab directory, interfaces and network namespaces.
    :param hosts: The hosts, at least one, with distinct names.
    :param init: Default init system of the hosts.
    :param subnet: A ``10.x.y.0/24``-style private /24, or ``None`` for the first free 10.213.N.0/24.
    :param packages: Debian packages made installable offline inside the hosts.
    :param user: An optional non-root user in every host.
    :param password: Whether root gets a (generated) password too, besides key login.
    :param source: The spec file it came from, if any (its group_vars/host_vars are linked).
    :param mhc: A pytest-mh host file (parsed ``mhc.yaml``) the lab was shaped after (``LabSpec.from_mhc``):
        the lab writes it again, each host's ``conn`` pointing at the lab host of the same name.
    """

    name: str = "lab"
    hosts: tuple[LabHostSpec, ...] = ()
    init: InitSystem = "sysv"
    subnet: str | None = None
    packages: tuple[str, ...] = ()
    user: LabUserSpec | None = None
    password: bool = False
    source: Path | None = field(default=None, compare=False)
    mhc: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _LAB_NAME_RE.match(self.name):
            raise LabError(
                f"lab name {self.name!r} is invalid: use up to 32 lower-case letters, digits, '-' or '_', "
                "starting with a letter"
            )
        object.__setattr__(self, "hosts", tuple(self.hosts))
        object.__setattr__(self, "packages", tuple(self.packages))
        if not self.hosts:
            raise LabError(f"lab {self.name!r} has no hosts")
        if len(self.hosts) > MAX_HOSTS:
            raise LabError(f"lab {self.name!r} has {len(self.hosts)} hosts, at most {MAX_HOSTS} fit in its /24")
        seen: set[str] = set()
        for host in self.hosts:
            if host.name in seen:
                raise LabError(f"lab {self.name!r}: host name {host.name!r} is used twice")
            seen.add(host.name)
        names = {h.name for h in self.hosts}
        fqdns: set[str] = set()
        for host in self.hosts:
            if host.fqdn is None or host.fqdn == host.name:
                continue
            if host.fqdn in fqdns or host.fqdn in names:
                raise LabError(f"lab {self.name!r}: host name {host.fqdn!r} is used twice")
            fqdns.add(host.fqdn)
        if self.init not in INIT_SYSTEMS:
            raise LabError(f"lab {self.name!r}: init {self.init!r} is invalid, use one of {INIT_SYSTEMS}")
        if self.subnet is not None:
            try:
                net = ipaddress.IPv4Network(self.subnet, strict=True)
            except ValueError as err:
                raise LabError(f"lab {self.name!r}: subnet {self.subnet!r} is not an IPv4 network: {err}") from err
            if net.prefixlen != 24 or not net.is_private:
                raise LabError(f"lab {self.name!r}: subnet {self.subnet!r} must be a private /24 (e.g. 10.213.7.0/24)")
            object.__setattr__(self, "subnet", str(net))
        for package in self.packages:
            if not isinstance(package, str) or not re.match(r"^[a-z0-9][a-z0-9+.-]+$", package):
                raise LabError(f"lab {self.name!r}: package name {package!r} is invalid")

    def init_of(self, host: LabHostSpec) -> InitSystem:
        """The init system a host runs: its own, else the lab's."""
        return host.init or self.init

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: Path | None = None) -> LabSpec:
        """Build a spec from the YAML form (see docs/lab.md)."""
        where = str(source) if source else "lab spec"
        if not isinstance(data, Mapping):
            raise LabError(f"{where}: expected a mapping at the top, got {type(data).__name__}")
        unknown = set(data) - {"name", "init", "subnet", "packages", "user", "password", "hosts", "mhc"}
        if unknown:
            raise LabError(f"{where}: unknown keys {sorted(unknown)!r}")
        subnet = data.get("subnet")
        if subnet in (None, "auto"):
            subnet = None
        packages = data.get("packages") or ()
        if isinstance(packages, str):
            packages = packages.split()
        hosts = data.get("hosts") or ()
        if not isinstance(hosts, Sequence) or isinstance(hosts, str):
            raise LabError(f"{where}: 'hosts' must be a list, got {hosts!r}")
        mhc = data.get("mhc")
        if mhc is not None and not isinstance(mhc, Mapping):
            raise LabError(f"{where}: 'mhc' must be a pytest-mh host file (a mapping), got {mhc!r}")
        try:
            return cls(
                name=str(data.get("name", "lab")),
                hosts=tuple(LabHostSpec.from_value(h) for h in hosts),
                init=cast(InitSystem, data.get("init", "sysv")),
                subnet=None if subnet is None else str(subnet),
                packages=tuple(str(p) for p in packages),
                user=LabUserSpec.from_value(data.get("user")),
                password=bool(data.get("password", False)),
                source=source,
                mhc=mhc,
            )
        except LabError as err:
            if source is None:
                raise
            raise LabError(f"{where}: {err}") from err

    @classmethod
    def from_mhc(cls, path: str | Path, **options: Any) -> LabSpec:
        """A lab shaped like a pytest-mh host file (``mhc.yaml``): one host per entry, by its name and role.

        Each host's ``hostname`` (``client.test``) becomes the lab host's ``fqdn``: its own hostname, its
        inventory name, and what every lab host resolves it by; roles become its inventory groups. The lab
        writes the file again as ``mhc.yaml`` in its directory, each ``conn`` pointing at the lab host.

        Example::

            with Lab(LabSpec.from_mhc("mhc.yaml", name="suite")) as lab:
                subprocess.run(["pytest", f"--mh-config={lab.mhc_path}"], check=True)

        :param options: Other spec fields (``name``, ``init``, ``packages``, ``user``, ...), as in the YAML form.
        :raises LabError: The file is not a pytest-mh host file, or a host cannot be made (a Windows host).
        """
        from pytest_mh_ansible._private.lab.from_mhc import mhc_hosts

        path = Path(path).absolute()
        try:
            data = yaml.safe_load(path.read_text())
        except OSError as err:
            raise LabError(f"{path}: cannot read the pytest-mh host file: {err.strerror}") from err
        except yaml.YAMLError as err:
            raise LabError(f"{path}: not valid YAML: {err}") from err
        hosts = mhc_hosts(data, source=str(path))
        return cls.from_dict({"name": "lab", **options, "hosts": hosts, "mhc": data})

    @classmethod
    def from_file(cls, path: str | Path) -> LabSpec:
        """Read a YAML spec file.

        :raises LabError: The file is missing, not YAML, or describes an invalid lab.
        """
        path = Path(path).absolute()
        try:
            data = yaml.safe_load(path.read_text())
        except OSError as err:
            raise LabError(f"{path}: cannot read the lab spec: {err.strerror}") from err
        except yaml.YAMLError as err:
            raise LabError(f"{path}: not valid YAML: {err}") from err
        return cls.from_dict(data or {}, source=path)

    def to_dict(self) -> dict[str, Any]:
        """The YAML form, as recorded in the lab state (``from_dict`` reads it back)."""
        return {
            "name": self.name,
            "init": self.init,
            "subnet": self.subnet or "auto",
            "packages": list(self.packages),
            "user": None
            if self.user is None
            else {
                "name": self.user.name,
                "sudo": self.user.sudo,
                "nopasswd": self.user.nopasswd,
                "password": self.user.password,
            },
            "password": self.password,
            "hosts": [
                {"name": h.name, "roles": list(h.roles), "init": h.init, "vars": dict(h.vars)}
                | ({} if h.fqdn is None else {"fqdn": h.fqdn})
                for h in self.hosts
            ],
        } | ({} if self.mhc is None else {"mhc": self.mhc})
