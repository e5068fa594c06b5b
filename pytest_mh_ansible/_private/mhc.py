"""A pytest-mh ``mhc.yaml`` as an Ansible inventory: ``convert-mhc`` writes it, ``--mh-config`` reads it directly."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["Conversion", "VaultValue", "convert_mhc", "dump_inventory", "read_mhc"]

_TOP_KEYS = {"config", "domains"}
_DOMAIN_KEYS = {"id", "hosts", "config"}
_HOST_KEYS = {"hostname", "role", "os", "conn", "config", "artifacts"}
_SSH_KEYS = {"type", "host", "port", "username", "user", "password", "private_key", "private_key_password", "timeout"}
_CONTAINER_KEYS = {"type", "container", "user", "sudo", "sudo_password", "timeout"}
_CONTAINER_PLUGINS = {"podman": "containers.podman.podman", "docker": "community.docker.docker"}
_NO_HOST_KEY_CHECKING = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
_OS_FAMILIES = ("linux", "windows")
_ARTIFACT_PHASES = ("pytest_setup", "pytest_teardown", "test")  # what pytest-mh 1.0.30 accepts in a host's artifacts
PYTEST_MH_DEFAULT_PASSWORD = "Secret123"


class VaultValue(str):
    """A vault-encrypted value: written as ``!vault |`` in the inventory."""


@dataclass
class Conversion:
    """The inventory made from an ``mhc.yaml``, and what could not be carried over (one line each)."""

    inventory: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def convert_mhc(
    data: Any,
    *,
    source: str,
    encrypt: Callable[[str], str] | None = None,
    host_key_checking: bool = True,
    ssh_plugin: str = "ssh",
) -> Conversion:
    """Convert a pytest-mh configuration (the parsed ``mhc.yaml``) to an Ansible inventory.

    Domains become groups that set ``mh_domain``; roles become groups (and ``mh_role``); ``conn``
    becomes ``ansible_*`` connection variables; ``config`` becomes ``mh_config`` (a domain's
    ``mh_domain_config``, the top level's ``mh_multihost_config``); ``artifacts`` ``mh_artifacts``;
    ``os.family`` ``mh_os_family``. Every other key is kept as pytest-mh keeps it in its
    ``confdict`` (suites read their own keys there, such as a top-level ``provisioned_topologies``):
    the top level's in ``mh_multihost_keys`` on ``all``, a domain's in ``mh_domain_keys`` on its
    group, a host's in ``mh_host_keys``. What has no equivalent is named in :attr:`Conversion.warnings`.

    :param source: The file's name, for messages.
    :param encrypt: Encrypts passwords (as vault values); None keeps them in plain text.
    :param host_key_checking: False skips host key checks, as pytest-mh does.
    :param ssh_plugin: The connection plugin of ``type: ssh`` hosts: ``ssh`` (OpenSSH) or ``paramiko``
        (in-process, as pytest-mh's libssh; cheaper per command on a busy controller).
    :raises ValueError: The file is not a pytest-mh configuration (naming the file and the place).
    """
    if ssh_plugin not in ("ssh", "paramiko"):
        raise ValueError(f"{source}: ssh plugin {ssh_plugin!r} is not 'ssh' or 'paramiko'")
    if not isinstance(data, Mapping) or not isinstance(data.get("domains"), list) or not data["domains"]:
        raise ValueError(f"{source}: not a pytest-mh configuration: it needs a non-empty list 'domains'")
    conversion = Conversion({"all": {}})
    warn = conversion.warnings.append
    top = conversion.inventory["all"]
    if data.get("config"):
        top["vars"] = {"mh_multihost_config": dict(data["config"])}
    if extra := _extra(data, _TOP_KEYS):
        top.setdefault("vars", {})["mh_multihost_keys"] = extra
    top["children"] = {}
    domain_groups: dict[str, dict[str, Any]] = {}
    role_groups: dict[str, dict[str, Any]] = {}
    roles = {
        str(host.get("role"))
        for domain in data["domains"]
        if isinstance(domain, Mapping)
        for host in domain.get("hosts") or []
        if isinstance(host, Mapping)
    }
    for d_index, domain in enumerate(data["domains"]):
        where = f"{source}: domains[{d_index}]"
        if not isinstance(domain, Mapping) or not domain.get("id") or not isinstance(domain.get("hosts"), list):
            raise ValueError(f"{where}: a domain needs 'id' and a list 'hosts'")
        domain_id = str(domain["id"])
        group_name = domain_id if domain_id not in roles else f"{domain_id}_domain"
        if group_name != domain_id:
            warn(f"{where}: domain {domain_id!r} has the name of a role; its group is {group_name!r}")
        group = domain_groups.setdefault(group_name, {"vars": {"mh_domain": domain_id}, "hosts": {}})
        if domain.get("config"):
            group["vars"]["mh_domain_config"] = dict(domain["config"])
        if extra := _extra(domain, _DOMAIN_KEYS):
            group["vars"]["mh_domain_keys"] = extra
        for h_index, host in enumerate(domain["hosts"]):
            here = f"{where}.hosts[{h_index}]"
            if not isinstance(host, Mapping) or not host.get("hostname") or not host.get("role"):
                raise ValueError(f"{here}: a host needs 'hostname' and 'role'")
            name = str(host["hostname"])
            role = str(host["role"])
            hostvars: dict[str, Any] = {"mh_role": role}
            hostvars.update(
                _connection(
                    host,
                    name,
                    f"{here} ({name})",
                    encrypt=encrypt,
                    host_key_checking=host_key_checking,
                    ssh_plugin=ssh_plugin,
                    warn=warn,
                )
            )
            family = (host.get("os") or {}).get("family") if isinstance(host.get("os"), Mapping) else None
            if family:
                if str(family).lower() not in _OS_FAMILIES:
                    raise ValueError(f"{here} ({name}).os.family: {family!r} is not one of {', '.join(_OS_FAMILIES)}")
                hostvars["mh_os_family"] = str(family).lower()
            if host.get("config"):
                hostvars["mh_config"] = dict(host["config"])
            if host.get("artifacts"):
                hostvars["mh_artifacts"] = _artifacts(host["artifacts"], f"{here} ({name}).artifacts")
            if extra := _extra(host, _HOST_KEYS):
                hostvars["mh_host_keys"] = extra
            group["hosts"][name] = hostvars
            role_groups.setdefault(role, {"hosts": {}})["hosts"][name] = None
    top["children"].update(domain_groups)
    top["children"].update(role_groups)
    return conversion


def _connection(
    host: Mapping[str, Any],
    name: str,
    where: str,
    *,
    encrypt: Callable[[str], str] | None,
    host_key_checking: bool,
    ssh_plugin: str,
    warn: Callable[[str], None],
) -> dict[str, Any]:
    conn = host.get("conn") or {"type": "ssh"}
    if not isinstance(conn, Mapping):
        raise ValueError(f"{where}: 'conn' must be a mapping, got {conn!r}")
    kind = str(conn.get("type", "ssh"))
    out: dict[str, Any] = {}

    def secret(value: Any) -> Any:
        return VaultValue(encrypt(str(value))) if encrypt is not None else str(value)

    if kind == "ssh":
        _unknown(conn, _SSH_KEYS, f"{where}.conn", warn)
        out["ansible_connection"] = ssh_plugin
        out["ansible_host"] = str(conn.get("host") or name)
        if conn.get("port"):
            out["ansible_port"] = int(conn["port"])
        user = conn.get("username")
        if user is None and conn.get("user") is not None:
            user = conn["user"]
            warn(f"{where}.conn: 'user' is read as the login user here; pytest-mh ignores it and logs in as root")
        out["ansible_user"] = str(user or "root")
        if conn.get("private_key"):
            out["ansible_ssh_private_key_file"] = str(conn["private_key"])
        if conn.get("private_key_password"):
            warn(f"{where}.conn: 'private_key_password' has no Ansible variable; load the key into ssh-agent")
        if conn.get("password"):
            out["ansible_password"] = secret(conn["password"])
        elif not conn.get("private_key"):
            out["ansible_password"] = secret(PYTEST_MH_DEFAULT_PASSWORD)
            warn(f"{where}.conn: no password and no key: pytest-mh's default password was written")
        if not host_key_checking:
            if ssh_plugin == "ssh":
                out["ansible_ssh_common_args"] = _NO_HOST_KEY_CHECKING
            else:
                out["ansible_host_key_checking"] = False
    elif kind in _CONTAINER_PLUGINS:
        _unknown(conn, _CONTAINER_KEYS, f"{where}.conn", warn)
        if not conn.get("container"):
            raise ValueError(f"{where}.conn: a {kind} connection needs 'container'")
        out["ansible_connection"] = _CONTAINER_PLUGINS[kind]
        out["ansible_host"] = str(conn["container"])
        if conn.get("user"):
            out["ansible_user"] = str(conn["user"])
        if conn.get("sudo"):
            warn(f"{where}.conn: 'sudo' (run {kind} through sudo) has no variable of the {kind} plugin; run as root")
    else:
        raise ValueError(f"{where}.conn: unknown connection type {kind!r} (pytest-mh knows ssh, podman, docker)")
    if conn.get("timeout") is not None:
        out["mh_command_timeout"] = conn["timeout"]
    return out


def _extra(data: Mapping[str, Any], known: set[str]) -> dict[str, Any]:
    """The keys of ``data`` that have no inventory equivalent, kept as they are."""
    return {str(key): value for key, value in data.items() if key not in known}


def _artifacts(value: Any, where: str) -> Any:
    """A host's ``artifacts``, checked as pytest-mh checks it: a list of paths, or a mapping by phase."""
    if isinstance(value, Mapping):
        wrong = [str(key) for key in value if key not in _ARTIFACT_PHASES]
        if wrong:
            raise ValueError(f"{where}: unknown phase {wrong[0]!r} (pytest-mh knows {', '.join(_ARTIFACT_PHASES)})")
        return {str(key): list(paths or []) for key, paths in value.items()}
    if isinstance(value, list):
        return value
    raise ValueError(f"{where}: a list of paths or a mapping by phase is needed, got {value!r}")


def _unknown(data: Mapping[str, Any], known: set[str], where: str, warn: Callable[[str], None]) -> None:
    for key in data:
        if key not in known:
            warn(f"{where}: unknown key {key!r} not converted")


class _Dumper(yaml.SafeDumper):
    pass


def _vault(dumper: yaml.SafeDumper, value: VaultValue) -> yaml.Node:
    return dumper.represent_scalar("!vault", str(value), style="|")


def _none(dumper: yaml.SafeDumper, value: None) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:null", "")


_Dumper.add_representer(VaultValue, _vault)
_Dumper.add_representer(type(None), _none)


def dump_inventory(conversion: Conversion, source: str) -> str:
    """The inventory as YAML text, with a header naming its source and every warning."""
    header = [f"# Ansible inventory converted from {source} by 'pytest-mh-ansible convert-mhc'."]
    header += [f"# warning: {line}" for line in conversion.warnings]
    body = yaml.dump(conversion.inventory, Dumper=_Dumper, sort_keys=False, default_flow_style=False)
    return "\n".join(header) + "\n" + body


def _has_paramiko_plugin() -> bool:
    """Whether ansible-core ships the paramiko plugin, looked up as a file: importing its package costs 0.7 s."""
    spec = importlib.util.find_spec("ansible")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return any((Path(place) / "plugins" / "connection" / "paramiko_ssh.py").is_file() for place in locations)


def read_mhc(path: Path, *, source: str) -> Conversion:
    """Read and convert an ``mhc.yaml`` as pytest-mh would use it (``--mh-config``): host keys never checked.

    ssh hosts connect through Ansible's paramiko plugin where ansible-core has it (2.19, 2.20): in-process
    like pytest-mh's libssh, and cheaper per command on a busy controller (the replica suite of
    tests/compat/replica took 0.73x the time over paramiko that it took over OpenSSH, two runs each).

    :param source: The path as the user wrote it, for messages.
    :raises ValueError: The file cannot be read or is not a pytest-mh configuration (one line naming it).
    """
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ValueError(f"{source}: cannot be read: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise ValueError(f"{source}: not YAML: {' '.join(str(err).split())}") from None
    in_process = _has_paramiko_plugin()
    return convert_mhc(data, source=source, host_key_checking=False, ssh_plugin="paramiko" if in_process else "ssh")
