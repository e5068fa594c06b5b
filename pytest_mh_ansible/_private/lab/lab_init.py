#!/usr/bin/python3
"""PID 1 of a lab host: mounts the host's filesystem view, then reaps zombies (sysv) or becomes systemd.

This file is copied into the lab directory as ``lab-init`` and run by the machine's /usr/bin/python3,
outside the package, so it imports nothing from it. Its name matters: Ansible reads the service manager
from /proc/1/comm and ignores names that are "init" or end in "sh", so "lab-init" makes Ansible use the
sysv ``service`` tool instead of guessing systemd.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import signal
import socket
import struct
import subprocess
import sys
import time
from typing import Any

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "ppc64le": 203, "s390x": 217, "riscv64": 41}
_libc = ctypes.CDLL(None, use_errno=True)
ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "TERM": "linux",
}


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source: str, target: str, fstype: str | None, flags: int = 0, data: str | None = None) -> None:
    _check(
        _libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {fstype or source} on {target}",
    )


def pivot_root(new_root: str) -> None:
    """Make ``new_root`` the root and detach the machine's root from this mount namespace."""
    os.chdir(new_root)
    number = _PIVOT_ROOT.get(platform.machine())
    if number is not None:
        _check(_libc.syscall(number, b".", b"."), "pivot_root")
    else:
        subprocess.run(["pivot_root", ".", "."], check=True)
    _check(_libc.umount2(b".", MNT_DETACH), "umount old root")
    os.chdir("/")


def make_dev() -> None:
    """A minimal /dev: no disks, the console is /dev/null, a private devpts instance."""
    mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=4m")
    for name, major, minor, mode in (
        ("null", 1, 3, 0o666),
        ("zero", 1, 5, 0o666),
        ("full", 1, 7, 0o666),
        ("random", 1, 8, 0o666),
        ("urandom", 1, 9, 0o666),
        ("tty", 5, 0, 0o666),
        ("console", 1, 3, 0o600),
    ):
        os.mknod(f"/dev/{name}", 0o020000 | mode, os.makedev(major, minor))
        os.chmod(f"/dev/{name}", mode)
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
    ):
        os.symlink(target, f"/dev/{name}")
    for sub in ("pts", "shm"):
        os.mkdir(f"/dev/{sub}")
    mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620,gid=5")
    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")


def build_root(cfg: dict[str, Any]) -> None:
    root = cfg["root"]
    mount("none", "/", None, MS_REC | MS_PRIVATE)
    mount("overlay", root, "overlay", 0, f"lowerdir=/,upperdir={cfg['upper']},workdir={cfg['work']}")
    pivot_root(root)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    # The kernel's settings are the machine's, but for the network's (one per namespace): a host's
    # sysctl -w kernel.pid_max (a module's, a test's) must fail, not change the machine under the lab.
    proc_flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    mount("/proc/sys", "/proc/sys", None, MS_BIND)
    mount("/proc/sys", "/proc/sys", None, MS_BIND | MS_REMOUNT | MS_RDONLY | proc_flags)
    mount("/proc/sys/net", "/proc/sys/net", None, MS_BIND)  # a bind keeps its source's read-only flag:
    mount("/proc/sys/net", "/proc/sys/net", None, MS_BIND | MS_REMOUNT | proc_flags)  # writable again
    mount("sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    make_dev()
    mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=755")
    os.makedirs("/run/lock", mode=0o1777, exist_ok=True)
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    if cfg["init"] == "systemd":
        # Inside our own cgroup namespace: systemd sees only the subtree prepared for this host.
        mount("cgroup2", "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, "nsdelegate")
    socket.sethostname(cfg["hostname"])


def first_boot(cfg: dict[str, Any]) -> None:
    """Create users and passwords once; later boots of the same upper dir find them there."""
    marker = "/var/lib/pytest-mh-ansible-lab.done"
    if os.path.exists(marker):
        return
    user = cfg.get("user")
    if user:
        subprocess.run(["useradd", "-m", "-s", "/bin/bash", user["name"]], check=True, env=ENV)
        if user.get("sudo"):
            rule = "NOPASSWD: ALL" if user.get("nopasswd") else "ALL"
            path = f"/etc/sudoers.d/pytest-mh-ansible-{user['name']}"
            with open(path, "w") as f:
                f.write(f"{user['name']} ALL=(ALL:ALL) {rule}\n")
            os.chmod(path, 0o440)
    if cfg.get("chpasswd"):
        subprocess.run(["chpasswd"], input=cfg["chpasswd"], text=True, check=True, env=ENV)
    with open(marker, "w") as f:
        f.write("done\n")


def write_runlevel(level: str = "2") -> None:
    """Record runlevel 2 in /run/utmp, as sysvinit does at boot.

    ``runlevel`` (and so ``invoke-rc.d``) reads it: without it, package installs would never start
    their services ("could not determine current runlevel"), unlike on an ordinary Debian host.
    """
    run_lvl = 1
    record = struct.pack(
        "hi32s4s32s256shhiii4i20s",
        run_lvl,
        ord(level) | (ord("N") << 8),
        b"~",
        b"~~",
        b"runlevel",
        b"",
        0,
        0,
        0,
        int(time.time()),
        0,
        *(0, 0, 0, 0),
        b"",
    )
    with open("/run/utmp", "wb") as f:
        f.write(record)
    os.chmod("/run/utmp", 0o664)


def sshd_started(timeout: float = 5.0) -> bool:
    """The init script's exit code is not reliable (Debian's reports 0 on a bad config): check the pid file."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists("/run/sshd.pid"):
            return True
        time.sleep(0.01)
    return False


def reap_forever() -> None:
    """PID 1's duty: orphans are re-parented here and must be waited for, or they stay zombies."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    while True:
        try:
            os.wait()
        except ChildProcessError:
            time.sleep(0.5)
        except InterruptedError:
            continue


def main() -> None:
    with open(sys.argv[1]) as f:
        cfg = json.load(f)
    os.environ.clear()
    os.environ.update(ENV)
    build_root(cfg)
    first_boot(cfg)
    if cfg["init"] == "systemd":
        # systemd reads this lower-case name: it then skips units meant for real machines only.
        os.environ["container"] = "pytest-mh-ansible"  # noqa: SIM112
        os.execv("/lib/systemd/systemd", ["/lib/systemd/systemd", "--log-target=console"])
    write_runlevel()
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation dir, else sshd refuses
    checked = subprocess.run(["/usr/sbin/sshd", "-t"], check=False, env=ENV).returncode == 0
    if checked:
        subprocess.run(["service", "ssh", "start"], check=False, env=ENV)
    if not checked or not sshd_started():
        # Exiting ends the host at once, so 'lab up' reports this instead of waiting for a port.
        print("lab-init: sshd did not start (see above); stopping this host", flush=True)
        sys.exit(1)
    print("lab-init: ready", flush=True)
    reap_forever()


if __name__ == "__main__":
    main()
