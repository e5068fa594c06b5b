"""The Lab: bringing a spec's hosts up, inspecting them, and tearing down exactly what was brought up."""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from types import TracebackType
from typing import Final, Self, final, overload

import yaml

from pytest_mh_ansible._private.lab import network, registry
from pytest_mh_ansible._private.lab.boot import host_keys, launch_host, prepare_layers, wait_ready
from pytest_mh_ansible._private.lab.inventory import (
    InventoryHost,
    render_inventory,
    render_known_hosts,
    render_ssh_config,
    write_private,
)
from pytest_mh_ansible._private.lab.naming import LabNames
from pytest_mh_ansible._private.lab.packages import ensure_packages
from pytest_mh_ansible._private.lab.spec import LabSpec
from pytest_mh_ansible._private.lab.state import STATE_FILE, HostState, LabState
from pytest_mh_ansible._private.lab.subnet import bridge_address, choose_subnet, host_address, taken_networks
from pytest_mh_ansible._private.lab.system import (
    cgroup2_root,
    check_machine,
    check_systemd,
    own_cgroup2_path,
    run,
)
from pytest_mh_ansible._private.lab.teardown import mounts_under, remove_cgroups, stop_hosts
from pytest_mh_ansible._private.local_files import open_private, private_dir
from pytest_mh_ansible.errors import LabError, TeardownExceptionGroup, UnsafePathError

__all__ = ["DEFAULT_ROOT", "ENV_ROOT", "Lab", "LabHost", "labs_root"]

DEFAULT_ROOT: Final = Path("/var/tmp/pytest-mh-ansible")
ENV_ROOT: Final = "PYTEST_MH_ANSIBLE_LAB_DIR"
_INIT_SCRIPT: Final = Path(__file__).with_name("lab_init.py")


def labs_root() -> Path:
    """Parent of lab directories and of the shared package cache: ``$PYTEST_MH_ANSIBLE_LAB_DIR`` or the default."""
    return Path(os.environ.get(ENV_ROOT) or DEFAULT_ROOT)


@final
@dataclass(frozen=True)
class LabHost:
    """One host of a running (or recorded) lab, as ``lab status`` shows it.

    :param pid: The host's PID 1 as seen from the machine (``nsenter -t PID -a`` enters the host).
    """

    name: str
    roles: tuple[str, ...]
    address: str
    init: str
    pid: int | None
    running: bool
    fqdn: str | None = None

    @property
    def hostname(self) -> str:
        """The host's own hostname and inventory name: its fully qualified name if it has one."""
        return self.fqdn or self.name


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    private_dir(path.parent, 0o755)
    with os.fdopen(open_private(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


class _LabFile:
    """A file of the lab directory, as a read-only attribute of :class:`Lab`: every lab uses the same names."""

    def __init__(self, name: str, doc: str) -> None:
        self.name = name
        self.__doc__ = doc

    def __set_name__(self, owner: type[Lab], attribute: str) -> None:
        self._attribute = attribute

    @overload
    def __get__(self, lab: None, owner: type[Lab] | None = None) -> Self: ...

    @overload
    def __get__(self, lab: Lab, owner: type[Lab] | None = None) -> Path: ...

    def __get__(self, lab: Lab | None, owner: type[Lab] | None = None) -> Self | Path:
        return self if lab is None else lab.directory / self.name

    def __set__(self, lab: Lab, value: object) -> None:
        raise AttributeError(f"Lab.{self._attribute} is read-only: it follows the lab's directory")


class Lab:
    """A set of isolated hosts on this machine, reachable by ssh and described by an Ansible inventory.

    Example::

        spec = LabSpec.from_file("lab.yml")
        with Lab(spec) as lab:
            subprocess.run(["ansible", "-i", lab.inventory_path, "all", "-m", "ping"], check=True)

    :param spec: What to bring up.
    :param directory: The lab directory; by default ``<labs root>/<spec.name>``.
    """

    def __init__(self, spec: LabSpec, directory: str | Path | None = None) -> None:
        self.spec = spec
        self._directory = Path(directory).absolute() if directory is not None else labs_root() / spec.name
        if any(c.isspace() for c in str(self._directory)):
            # the path goes unquoted into ansible_ssh_common_args and ssh_config
            raise LabError(f"lab {spec.name!r}: directory {str(self._directory)!r} must not contain whitespace")
        self.names = LabNames(spec.name)

    def __repr__(self) -> str:
        return f"Lab({self.spec.name!r}, directory={str(self._directory)!r})"

    @classmethod
    def from_directory(cls, directory: str | Path) -> Lab:
        """Re-open a lab from the state recorded in its directory (to inspect it or bring it down)."""
        directory = Path(directory).absolute()
        state = LabState.load(directory)
        return cls(LabSpec.from_dict(state.spec), directory)

    # -- paths -------------------------------------------------------------------------------------------
    @property
    def directory(self) -> Path:
        return self._directory

    inventory_path = _LabFile("hosts.yml", "The Ansible inventory of the lab's hosts (YAML).")
    ssh_config_path = _LabFile("ssh_config", "An ssh_config that reaches each host by its name (``ssh -F``).")
    known_hosts_path = _LabFile("known_hosts", "The host keys of the lab's hosts, for strict host key checking.")
    key_path = _LabFile("id_ed25519", "The client's private ssh key, authorized for root on every host.")
    mhc_path = _LabFile(
        "mhc.yaml",
        "A pytest-mh host file of the lab (``--mh-config``), written if the lab was shaped after one "
        "(``LabSpec.from_mhc``, ``lab up --from-mhc``).",
    )
    passwords_path = _LabFile(
        "passwords.yml", "YAML mapping of user name to generated password (mode 0600), if the spec asks for passwords."
    )

    def host_dir(self, name: str) -> Path:
        """Where a host's overlay layers live; ``upper/`` holds every file the host changed."""
        return self._directory / "hosts" / name

    @property
    def _cache_dir(self) -> Path:
        return labs_root() / "cache" / "debs"

    # -- state -------------------------------------------------------------------------------------------
    def _state(self) -> LabState | None:
        if not (self._directory / STATE_FILE).exists():
            return None
        return LabState.load(self._directory)

    def status(self) -> list[LabHost]:
        """The recorded hosts and whether each is running; empty if the lab is not up."""
        state = self._state()
        if state is None:
            return []
        return [
            LabHost(
                name=h.name,
                roles=h.roles,
                address=h.address,
                init=h.init,
                pid=h.pid1.pid if h.pid1 else None,
                running=bool(h.pid1 and h.pid1.alive and h.launcher and h.launcher.alive),
                fqdn=h.fqdn,
            )
            for h in state.hosts
        ]

    @property
    def hosts(self) -> list[LabHost]:
        return self.status()

    @property
    def is_up(self) -> bool:
        """Every recorded host is running."""
        hosts = self.status()
        return bool(hosts) and all(h.running for h in hosts)

    def run_inside(self, name: str, command: str, *, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """Run a shell command inside lab host ``name`` by entering its namespaces, not over ssh.

        For what ssh cannot do: stop or restart the host's sshd, inspect it while its connection is broken.

        Example::

            lab.run_inside("server1", "pkill -x sshd; sleep 0.3; /usr/sbin/sshd")

        :raises LabError: The host is not running.
        """
        pid = next((h.pid for h in self.status() if h.name == name and h.running), None)
        if pid is None:
            raise LabError(f"lab {self.spec.name!r}: host {name!r} is not running")
        return subprocess.run(
            ["nsenter", "-t", str(pid), "-a", "/bin/sh", "-c", command],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def __enter__(self) -> Lab:
        return self.up()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.down()

    # -- up ----------------------------------------------------------------------------------------------
    def up(self, *, replace: bool = False) -> Lab:
        """Bring the lab up; an already-running lab with the same spec is left alone.

        A recorded lab that is partly dead is torn down first. A running lab of another spec is its
        hosts and their files: it is replaced only when ``replace`` says so.

        :raises LabError: The machine cannot host the lab, a host did not come up (the lab is torn
            down), or a lab of this name runs with another spec and ``replace`` is false.
        """
        check_machine()
        if any(self.spec.init_of(h) == "systemd" for h in self.spec.hosts):
            check_systemd()
        try:
            return self._up_locked(replace)
        except UnsafePathError as err:
            raise LabError(f"lab {self.spec.name!r}: {err}") from None

    def _up_locked(self, replace: bool = False) -> Lab:
        with registry.locked(self.spec.name), self._lock():
            elsewhere = registry.lookup(self.spec.name)
            if elsewhere is not None and elsewhere != self._directory and (elsewhere / STATE_FILE).exists():
                # the name's bridge, netns and cgroups are taken by the lab there
                raise LabError(
                    f"lab {self.spec.name!r} is already up in {elsewhere}: bring it down first "
                    f"(pytest-mh-ansible lab down --name {self.spec.name})"
                )
            state = self._state()
            if state is not None:
                if state.spec == self.spec.to_dict() and self.is_up:
                    return self
                if self.is_up and not replace:
                    changed = sorted(k for k in {**state.spec, **self.spec.to_dict()}
                                     if state.spec.get(k) != self.spec.to_dict().get(k))  # fmt: skip
                    raise LabError(
                        f"lab {self.spec.name!r} is up with another spec (it differs in {', '.join(changed)}): "
                        "bringing it up again would replace its hosts and their files; bring it down first "
                        f"(pytest-mh-ansible lab down --name {self.spec.name}) or replace it (lab up --replace)"
                    )
                self._down()
            created = not self._directory.exists()
            try:
                self._up()
            except BaseException:
                with suppress(LabError):
                    self._down()
                if created and self._state() is None:
                    # failed before anything outside the directory existed: leave no trace either
                    shutil.rmtree(self._directory, ignore_errors=True)
                raise
        return self

    @contextmanager
    def _lock(self) -> Iterator[None]:
        """Serialise up/down of labs sharing a parent directory (flock on the directory: no lock file left)."""
        parent = private_dir(self._directory.parent, 0o755)
        fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _up(self) -> None:
        spec, names, directory = self.spec, self.names, self._directory
        private_dir(directory, 0o755)
        os.chmod(directory, 0o755)
        debs = ensure_packages(spec.packages, self._cache_dir) if spec.packages else []
        if not self.key_path.exists():
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"pytest-mh-ansible-lab-{spec.name}",
                 "-f", str(self.key_path)], what=f"lab {spec.name!r}: creating the client key")  # fmt: skip
        passwords = self._passwords()
        init_script = directory / "bin" / "lab-init"
        # run as root in every host: written only into a directory nobody else can change
        private_dir(init_script.parent, 0o755)
        write_private(init_script, _INIT_SCRIPT.read_bytes(), 0o755)

        with _locked(labs_root() / ".network.lock"):
            subnet = choose_subnet(spec.subnet, taken_networks(), lab=spec.name)
            hosts = self._plan_hosts(subnet)
            state = LabState(
                name=spec.name,
                spec=spec.to_dict(),
                subnet=str(subnet),
                bridge=names.bridge,
                hosts=tuple(hosts),
                cgroup=self._make_cgroups(hosts),
                secrets=passwords,
            )
            state.save(directory)  # from here on, 'down' knows what to remove
            registry.register(spec.name, directory)  # ... and 'down --name' finds it
            network.create_bridge(names.bridge, bridge_address(subnet), subnet)
            for host in hosts:
                network.create_host_link(
                    host.netns, host.veth, names.bridge, IPv4Address(host.address), bridge_address(subnet)
                )

        host_dirs = {h.name: self.host_dir(h.name) for h in hosts}
        keys = host_keys(hosts, host_dirs)
        prepare_layers(
            hosts,
            host_dirs,
            keys=keys,
            authorized_keys=Path(f"{self.key_path}.pub").read_text(),
            hidden=[str(directory), str(labs_root())],
            passwords=passwords,
            user=spec.user,
            root_password=spec.password,
            debs=debs,
        )
        started = []
        for host in hosts:
            started.append(launch_host(host, host_dirs[host.name], init_script))
            state = replace(state, hosts=(*started, *hosts[len(started) :]))
            state.save(directory)
        wait_ready(spec.name, started, host_dirs)
        self._write_client_files(started, keys, passwords)

    def _passwords(self) -> dict[str, str]:
        passwords: dict[str, str] = {}
        if self.spec.password:
            passwords["root"] = secrets.token_urlsafe(12)
        if self.spec.user is not None:
            passwords[self.spec.user.name] = self.spec.user.password or secrets.token_urlsafe(12)
        if passwords:
            write_private(self.passwords_path, "".join(f"{k}: {v}\n" for k, v in passwords.items()))
        return passwords

    def _plan_hosts(self, subnet: IPv4Network) -> list[HostState]:
        cg_base = None
        hosts = []
        for index, spec in enumerate(self.spec.hosts):
            init = self.spec.init_of(spec)
            if init == "systemd":
                cg_base = cg_base or self._cgroup_base()
            hosts.append(
                HostState(
                    name=spec.name,
                    roles=spec.roles,
                    address=str(host_address(subnet, index)),
                    init=init,
                    netns=self.names.netns(spec.name),
                    veth=self.names.veth(index),
                    cgroup=str(cg_base / spec.name) if cg_base else None,
                    fqdn=spec.fqdn,
                )
            )
        return hosts

    def _cgroup_base(self) -> Path:
        return cgroup2_root() / own_cgroup2_path().lstrip("/") / self.names.cgroup

    def _make_cgroups(self, hosts: list[HostState]) -> str | None:
        """systemd hosts each get a cgroup2 subtree of their own, so systemd never sees the machine's tree."""
        paths = [Path(h.cgroup) for h in hosts if h.cgroup]
        for path in paths:
            path.mkdir(parents=True, exist_ok=True)
        return str(paths[0].parent) if paths else None

    def _write_client_files(self, hosts: list[HostState], host_keys: dict[str, str], passwords: dict[str, str]) -> None:
        inv_hosts = [
            InventoryHost(s.hostname, h.address, h.roles, host_keys[h.name], dict(s.vars), alias=h.name)
            for h, s in zip(hosts, self.spec.hosts, strict=True)
        ]
        user = self.spec.user
        write_private(
            self.inventory_path,
            render_inventory(
                lab=self.spec.name,
                group=self.names.group,
                hosts=inv_hosts,
                key_path=self.key_path,
                known_hosts=self.known_hosts_path,
                user=None if user is None else {"name": user.name, "password": passwords[user.name]},
                root_password=passwords.get("root"),
            ),
        )
        self.known_hosts_path.write_text(render_known_hosts(inv_hosts))
        self.ssh_config_path.write_text(
            render_ssh_config(inv_hosts, key_path=self.key_path, known_hosts=self.known_hosts_path)
        )
        if self.spec.mhc is not None:
            from pytest_mh_ansible._private.lab.from_mhc import lab_mhc

            addresses = {s.hostname: h.address for h, s in zip(hosts, self.spec.hosts, strict=True)}
            mhc = lab_mhc(self.spec.mhc, addresses, self.key_path)
            header = f"# pytest-mh host file of the pytest-mh-ansible lab {self.spec.name!r}; rewritten by 'lab up'.\n"
            write_private(self.mhc_path, header + yaml.safe_dump(mhc, sort_keys=False, default_flow_style=False))
        source = self.spec.source
        if source is not None:
            for name in ("group_vars", "host_vars"):
                target = source.parent / name
                link = self._directory / name
                if target.is_dir() and not link.exists():
                    link.symlink_to(target)

    # -- down --------------------------------------------------------------------------------------------
    def down(self) -> None:
        """Stop exactly what ``up`` started (recorded PIDs only), then remove the network, cgroups and directory.

        Every step runs even if an earlier one fails; the failures are raised together at the end.
        Bringing down a lab that is not up does nothing.

        :raises LabError: Something could not be removed (its cause is a TeardownExceptionGroup naming each).
        """
        with registry.locked(self.spec.name), self._lock():
            self._down()

    def _down(self) -> None:
        state = self._state()
        errors: list[Exception] = []
        if state is not None:
            errors += stop_hosts(state)
            errors += remove_cgroups(state)
            for host in state.hosts:
                errors += network.delete_host_link(host.netns, host.veth)
            errors += network.delete_bridge(state.bridge, [h.veth for h in state.hosts])
            # A lab brought up by an earlier version may have an ssh ControlPath directory outside its own.
            if state.control_dir and not Path(state.control_dir).is_relative_to(self._directory):
                shutil.rmtree(state.control_dir, ignore_errors=True)
        mounted = mounts_under(self._directory)
        if mounted:
            errors.append(LabError(f"lab {self.spec.name!r}: mounts remain under {self._directory}: {mounted}"))
        elif self._directory.exists() and (state is not None or not any(self._directory.iterdir())):
            try:
                shutil.rmtree(self._directory)
            except OSError as err:
                errors.append(LabError(f"lab {self.spec.name!r}: cannot remove {self._directory}: {err}"))
        if not errors and not (self._directory / STATE_FILE).exists():
            registry.unregister(self.spec.name, self._directory)  # kept after a failure: 'down' can try again
        if errors:
            group = TeardownExceptionGroup(f"lab {self.spec.name!r}: teardown failed", errors)
            message = "; ".join(str(e) for e in errors)
            raise LabError(f"lab {self.spec.name!r}: teardown failed: {message}") from group
