"""A host's private filesystem layer: the overlay upper dir, prepared from outside before the host boots."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final

__all__ = ["APT_BINARY_CACHE_CONF", "MAN_DB_AUTO_UPDATE", "HostLayer", "etc_hosts", "sshd_config"]

_HOST_KEYS_HIDDEN: Final = ("ssh_host_rsa_key", "ssh_host_ecdsa_key", "ssh_host_ed25519_key", "ssh_host_dsa_key")
# Its presence makes man-db's dpkg trigger rebuild the manual index; hidden in the hosts.
MAN_DB_AUTO_UPDATE: Final = "/var/lib/man-db/auto-update"
# Read after every other apt.conf.d file (they are read in name order), docker-clean included.
APT_BINARY_CACHE_CONF: Final = "/etc/apt/apt.conf.d/zz-mh-lab-binary-cache"
# Units that a systemd host starts besides the ones systemd pulls in statically (journald, logind, dbus).
_SYSTEMD_WANTS: Final = {"multi-user.target.wants": ("ssh.service",)}


class HostLayer:
    """The upper directory of one host's overlay over ``/``.

    Files written here before boot appear in the host (and only there). Directories are created with
    the mode and owner of the machine's own, so the host's ``/etc`` is still a normal ``/etc``.
    """

    def __init__(self, upper: Path) -> None:
        self.upper = upper

    def path(self, inside: str) -> Path:
        return self.upper / inside.lstrip("/")

    def mkdirs(self, inside: str) -> Path:
        """Create ``inside`` and its parents in the upper dir, copying modes and owners from the machine."""
        current = self.upper
        real = Path("/")
        for part in Path(inside.lstrip("/")).parts:
            current = current / part
            real = real / part
            if not current.is_dir():
                current.mkdir()
                try:
                    st = real.stat()
                except FileNotFoundError:
                    continue
                os.chmod(current, stat.S_IMODE(st.st_mode))
                os.chown(current, st.st_uid, st.st_gid)
        return current

    def write(self, inside: str, content: str | bytes, mode: int = 0o644) -> None:
        target = self.path(inside)
        self.mkdirs(str(Path(inside).parent))
        if isinstance(content, str):
            content = content.encode()
        if target.is_symlink() or target.exists():
            target.unlink()  # a whiteout or a link, which writing through would not replace
        target.write_bytes(content)
        os.chmod(target, mode)

    def symlink(self, inside: str, target: str) -> None:
        link = self.path(inside)
        self.mkdirs(str(Path(inside).parent))
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)

    def opaque(self, inside: str, mode: int | None = None) -> None:
        """Make a directory start empty in the host: the machine's content below it is not seen."""
        directory = self.mkdirs(inside)
        if mode is not None:
            os.chmod(directory, mode)
        os.setxattr(directory, "trusted.overlay.opaque", b"y")

    def whiteout(self, inside: str) -> None:
        """Delete a machine file in the host only (an overlay whiteout is a 0/0 character device)."""
        target = self.path(inside)
        self.mkdirs(str(Path(inside).parent))
        if target.exists() or target.is_symlink():
            target.unlink()
        os.mknod(target, stat.S_IFCHR | 0o600, os.makedev(0, 0))

    def link_files(self, inside: str, files: Iterable[Path]) -> None:
        """Hard-link (or copy, across file systems) files into a host directory."""
        directory = self.mkdirs(inside)
        for src in files:
            dst = directory / src.name
            if dst.exists():
                continue
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)

    def setup_base(self, *, hostname: str, etc_hosts: str, hidden: Iterable[str]) -> None:
        """Identity and hygiene: hostname, /etc/hosts, empty /root and /home, lab files hidden."""
        self.write("/etc/hostname", hostname + "\n")
        self.write("/etc/hosts", etc_hosts)
        # Hosts have no route off the machine: a DNS server there would only make every lookup of an
        # unknown name (getent tries IPv6 first) wait for a timeout. Loopback refuses at once.
        self.write("/etc/resolv.conf", "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
        self.opaque("/root", 0o700)
        self.opaque("/home", 0o755)
        hidden = sorted(hidden)
        for directory in hidden:
            if not any(directory != other and directory.startswith(other + "/") for other in hidden):
                self.opaque(directory)
        # The machine's own rollback snapshots (from runs with the local connection) are not the
        # host's, and overlayfs cannot rename a new snapshot directory into a lower-layer one (EXDEV).
        if Path("/var/lib/mh-ansible").exists():
            self.whiteout("/var/lib/mh-ansible")
        # Hosts behave like ordinary machines: package installs may start their services.
        if Path("/usr/sbin/policy-rc.d").exists():
            self.whiteout("/usr/sbin/policy-rc.d")
        # man-db's dpkg trigger rebuilds the whole manual index after every install and removal: 4.5 s
        # of the 6 s an install of 'tree' took on a lab host, paid again by its rollback. Without this
        # flag file the trigger does nothing (Debian's container images carry no man-db at all).
        if Path(MAN_DB_AUTO_UPDATE).exists():
            self.whiteout(MAN_DB_AUTO_UPDATE)
        # apt's binary package caches, as an installed Debian keeps them. Debian's container images turn
        # them off (docker-clean: Dir::Cache::pkgcache ""), and then every apt-get, apt-mark and apt module
        # call parses all package lists again: 1.9 s (1 s of CPU) each on a machine with the image's lists,
        # 0.02 s with the cache. Each host builds its own, in its upper layer, on its first apt call.
        if Path(APT_BINARY_CACHE_CONF).parent.is_dir():
            self.write(
                APT_BINARY_CACHE_CONF,
                "// pytest-mh-ansible lab: apt's default binary caches (the machine's image may turn them off)\n"
                'Dir::Cache::pkgcache "pkgcache.bin";\nDir::Cache::srcpkgcache "srcpkgcache.bin";\n',
            )

    def setup_ssh(self, *, sshd_config: str, host_key: bytes, host_key_pub: str, authorized_keys: str) -> None:
        """The host's own sshd configuration and host key; the machine's host keys are not visible."""
        for name in _HOST_KEYS_HIDDEN:
            for suffix in ("", ".pub"):
                if Path("/etc/ssh", name + suffix).exists():
                    self.whiteout(f"/etc/ssh/{name}{suffix}")
        self.write("/etc/ssh/sshd_config", sshd_config)
        self.write("/etc/ssh/ssh_host_ed25519_key", host_key, 0o600)
        self.write("/etc/ssh/ssh_host_ed25519_key.pub", host_key_pub)
        self.write("/root/.ssh/authorized_keys", authorized_keys, 0o600)
        os.chmod(self.path("/root/.ssh"), 0o700)

    def setup_systemd(self, masked: Iterable[str] = ("console-getty.service",)) -> None:
        """Only ssh (plus journald, logind, dbus) starts: the machine's enabled units stay off."""
        wants_root = Path("/etc/systemd/system")
        for wants in sorted(wants_root.glob("*.wants")) if wants_root.is_dir() else []:
            self.opaque(f"/etc/systemd/system/{wants.name}")
        for wants_dir, units in _SYSTEMD_WANTS.items():
            self.opaque(f"/etc/systemd/system/{wants_dir}")
            for unit in units:
                self.symlink(f"/etc/systemd/system/{wants_dir}/{unit}", f"/lib/systemd/system/{unit}")
        for unit in masked:
            self.symlink(f"/etc/systemd/system/{unit}", "/dev/null")
        self.symlink("/etc/systemd/system/default.target", "/lib/systemd/system/multi-user.target")


def etc_hosts(addresses: Mapping[str, str], fqdns: Mapping[str, str] | None = None) -> str:
    """The /etc/hosts every host gets: itself and its peers by name.

    A host with a fully qualified name is listed by it first (what ``hostname -f`` answers), then by its
    short name: ``10.213.0.2  client.test client``.
    """
    fqdns = fqdns or {}
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    for name, address in addresses.items():
        fqdn = fqdns.get(name)
        lines.append(f"{address}\t{fqdn} {name}" if fqdn and fqdn != name else f"{address}\t{name}")
    return "\n".join(lines) + "\n"


def sshd_config(*, root_password: bool) -> str:
    """A complete sshd_config (not a drop-in: the machine's own must not leak into the host)."""
    return "\n".join(
        [
            "# Written by pytest-mh-ansible for a lab host.",
            "Port 22",
            "HostKey /etc/ssh/ssh_host_ed25519_key",
            f"PermitRootLogin {'yes' if root_password else 'prohibit-password'}",
            "PubkeyAuthentication yes",
            "PasswordAuthentication yes",
            "KbdInteractiveAuthentication no",
            "UsePAM yes",
            "UseDNS no",
            "PrintMotd no",
            "X11Forwarding no",
            "AcceptEnv LANG LC_*",
            "PidFile /run/sshd.pid",
            "Subsystem sftp /usr/lib/openssh/sftp-server",
            "",
        ]
    )
