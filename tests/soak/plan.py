"""The soak's plan: which test runs on which host, which changes it makes and which fault it meets.

Everything is drawn from one ``random.Random(seed)``, so a seed and a profile name give the same plan
on every machine (the plan is also written next to the suite as ``plan.json``). Nothing here touches
a host: the plan is data that the generated suite (``suite_conftest.py``) carries out.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Final

from .states import STATE_CHANGES

# The lab: two sysv hosts and one systemd host (docs/lab.md). Each host has a role of its own, so
# that each test uses (and the drift check fingerprints) one host.
HOSTS: Final = (("sysv1", "sysv"), ("sysd1", "systemd"), ("sysv2", "sysv"))

# Every fault kind the soak injects. The driver checks that each scheduled one really happened.
FAULTS: Final = (
    "fail_body",  # the test body fails after its changes
    "fail_setup",  # a fixture makes the changes, then errors (a failing setup)
    "sigint",  # SIGINT to pytest mid-test, then a resumed run
    "sigterm",  # SIGTERM to pytest mid-test, then a resumed run
    "sighup",  # SIGHUP to pytest mid-test, then a resumed run
    "sshd_restart",  # the host's sshd killed (every session with it) and started again, mid-test
    "timeout_call",  # a command past its own timeout= (ProcessTimeoutError), the test goes on
    "timeout_test",  # a command past the test's mh_timeout (the test fails with TestTimeoutError)
    "full_tmp",  # the host's /tmp filled during the test, freed only after its teardown and rollback
)
SIGNAL_FAULTS: Final = ("sigint", "sigterm", "sighup")

# Change kinds: every bundled utility and raw module calls (ansible.builtin.*), each reversible.
CHANGES: Final = (
    "fs.write",
    "fs.append",
    "fs.mkdir_touch",
    "fs.chmod_chown",
    "fs.rm",
    "users.add",
    "users.group_member",
    "users.modify",
    "svc.start",
    "svc.stop",
    "svc.restart",
    "svc.enable",
    "svc.disable",
    "sysctl.set",
    "config.ini",
    "config.line",
    "config.block",
    "firewall.reject_port",
    "firewall.reject_host",
    "tc.limit_rate",
    "pkg.install",
    "module.copy",
    "module.lineinfile",
    "module.blockinfile",
    "module.file",
    "module.user",
    "module.group",
    "module.service",
    *STATE_CHANGES,  # pre-existing objects in unusual states (states.py)
)
# A package install or removal costs seconds (a dpkg run each way): drawn ten times less often than the others.
PACKAGE_CHANGES: Final = ("pkg.install", "state.held_pkg")
RARE: Final = dict.fromkeys(PACKAGE_CHANGES, 0.1)
# Tests of these faults make no package change: a timeout_test had a few seconds for its changes (they
# are made in setup now, the plan is kept so that seeds give the plans they gave), and apt
# cannot remove a package while /tmp is full ("E:Write error - write (28: No space left on device)"),
# so a full_tmp test's rollback would fail for apt's sake, not the product's (the soak found it).
NO_PACKAGES: Final = ("timeout_test", "full_tmp")
# Net keys only: lab hosts share the machine's kernel, but net.* is per network namespace.
SYSCTL_KEYS: Final = (
    "net.ipv4.ip_forward",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.icmp_echo_ignore_all",
    "net.ipv4.conf.all.rp_filter",
    "net.ipv6.conf.all.forwarding",
)
EXISTING_FILES: Final = ("/etc/issue", "/etc/issue.net", "/etc/motd", "/etc/hosts")


@dataclass(frozen=True)
class Profile:
    """How big a soak is: ``tests`` tests, ``faults[kind]`` of each fault kind, the rest plain."""

    name: str
    tests: int
    faults: dict[str, int]
    seed: int = 13
    cover_changes: bool = False  # every change kind at least once (the short profile)
    changes: tuple[str, ...] = CHANGES  # the change kinds drawn from
    per_test: tuple[int, int] = (3, 5)  # how many changes a test makes (at least, at most)


PROFILES: Final = {
    # CI: one test per fault kind, every change kind but the package changes (seconds each way; the
    # integration tests of the engine and the state suite cover them); a few minutes.
    "short": Profile(
        "short",
        tests=len(FAULTS),
        faults=dict.fromkeys(FAULTS, 1),
        cover_changes=True,
        changes=tuple(kind for kind in CHANGES if kind not in PACKAGE_CHANGES),
        per_test=(3, 3),  # raised to 4 or 5 by cover_changes: 9 tests for the 40 kinds, each once
    ),
    "full": Profile(
        "full",
        tests=1000,
        faults={
            "fail_body": 60,
            "fail_setup": 40,
            "sigint": 3,
            "sigterm": 3,
            "sighup": 3,
            "sshd_restart": 20,
            "timeout_call": 15,
            "timeout_test": 10,
            "full_tmp": 15,
        },
    ),
}


def _change(rng: random.Random, kind: str, test: int, number: int, others: list[str]) -> dict[str, Any]:
    """The arguments of one change; names carry the test and change numbers, so that none collide."""
    tag = f"{test:04d}-{number}"
    word = rng.choice(("alpha", "beta", "gamma", "delta"))
    args: dict[str, Any] = {}
    if kind == "fs.write":
        args = dict(path=f"/etc/mhsoak-{tag}.conf", content=f"{word} = {rng.randint(0, 9999)}\n", mode="0640")
    elif kind in ("fs.append", "module.lineinfile", "config.line"):
        args = dict(path=rng.choice(EXISTING_FILES[:3]), line=f"# mhsoak {tag} {word}")
    elif kind == "fs.mkdir_touch":
        args = dict(path=f"/etc/mhsoak-d{tag}/a/b", mode=rng.choice(("0750", "0700", "0755")))
    elif kind == "fs.chmod_chown":
        args = dict(path=rng.choice(EXISTING_FILES[:3]), mode=rng.choice(("0600", "0640", "0444")))
    elif kind == "fs.rm":
        args = dict(path=rng.choice(EXISTING_FILES[:3]))
    elif kind in ("users.add", "module.user"):
        args = dict(name=f"mhs{tag.replace('-', 'u')}", shell=rng.choice(("/bin/sh", "/bin/bash")))
    elif kind in ("users.group_member", "module.group"):
        args = dict(name=f"mhs{tag.replace('-', 'g')}", gid=20000 + test * 8 + number)
    elif kind == "users.modify":
        args = dict(comment=f"mhsoak {tag}", shell=rng.choice(("/bin/sh", "/usr/sbin/nologin")))
    elif kind.startswith("svc.") or kind == "module.service":
        # mhsoak-off is stopped and disabled at the start, mhsoak-on runs and is enabled (see the driver)
        service = "mhsoak-on" if kind in ("svc.stop", "svc.disable") else "mhsoak-off"
        args = dict(name=service)
    elif kind == "sysctl.set":
        args = dict(key=rng.choice(SYSCTL_KEYS))
    elif kind == "config.ini":
        args = dict(path=f"/etc/mhsoak-{tag}.ini", section=word, option="opt", value=str(rng.randint(0, 99)))
    elif kind in ("config.block", "module.blockinfile"):
        args = dict(path=rng.choice((f"/etc/mhsoak-b{tag}.conf", "/etc/issue")), block=f"{word} {tag}", tag=tag)
    elif kind == "firewall.reject_port":
        args = dict(port=rng.randint(1024, 65000), inbound=rng.random() < 0.5)
    elif kind in ("firewall.reject_host", "tc.limit_rate"):
        args = dict(target=rng.choice(others), rate=rng.choice(("256kbit", "1mbit", "10mbit")))
    elif kind == "pkg.install":
        args = dict(name="tree")
    elif kind == "module.copy":
        args = dict(dest=f"/etc/mhsoak-c{tag}.conf", content=f"{word}\n", mode=rng.choice(("0600", "0644")))
    elif kind.startswith("state."):
        # how a test changes the object: a raw module call or a bundled utility (where one fits)
        args = dict(via=rng.choice(("module", "utility")), variant=rng.choice(("unmask", "static", "dropin")))
        if kind == "state.group_noshadow":
            args["gid"] = 30000 + test * 8 + number
        elif kind == "state.user_noshadow":
            args["comment"] = f"mhsoak {tag}"
    elif kind == "module.file":
        args = dict(
            path=f"/etc/mhsoak-f{tag}",
            state=rng.choice(("directory", "link", "touch")),
            remove=rng.choice(EXISTING_FILES[:3]),
        )
    return {"kind": kind, "args": args}


def _no_chmod_of_removed_files(changes: list[dict[str, Any]]) -> None:
    """A chmod + chown of a file that an earlier change of the same test removed would fail: it takes /etc/hosts."""
    removed: set[str] = set()
    for change in changes:
        args = change["args"]
        if change["kind"] == "fs.chmod_chown" and args["path"] in removed:
            args["path"] = "/etc/hosts"
        elif change["kind"] == "fs.rm":
            removed.add(args["path"])
        elif change["kind"] == "module.file":
            removed.add(args["remove"])
        elif change["kind"] in ("fs.append", "module.lineinfile", "config.line"):
            removed.discard(args["path"])  # created again


def make_plan(profile: Profile, seed: int | None = None, tests: int | None = None) -> dict[str, Any]:
    """The plan for ``profile`` (``seed`` and ``tests`` override the profile's), as JSON-ready data."""
    seed = profile.seed if seed is None else seed
    count = profile.tests if tests is None else tests
    rng = random.Random(seed)
    faults = [kind for kind in FAULTS for _ in range(profile.faults.get(kind, 0))]
    if len(faults) > count:
        raise ValueError(f"profile {profile.name!r}: {len(faults)} faults do not fit in {count} tests")
    faults += ["none"] * (count - len(faults))
    rng.shuffle(faults)
    kinds = profile.changes
    weights = [RARE.get(kind, 1.0) for kind in kinds]
    counts = [rng.randint(*profile.per_test) for _ in faults]
    if profile.cover_changes:  # every change kind at least once: a shuffled round of all, then draws
        for position in range(len(counts) * 5):
            if sum(counts) >= len(kinds):
                break
            counts[position % len(counts)] = min(5, counts[position % len(counts)] + 1)
        pool = list(kinds)
        rng.shuffle(pool)
        pool += rng.choices(kinds, weights=weights, k=sum(counts) - len(pool))
    else:
        pool = rng.choices(kinds, weights=weights, k=sum(counts))
    slices, start = [], 0
    for count in counts:
        slices.append(pool[start : start + count])
        start += count
    # The package changes of NO_PACKAGES tests trade places with a change of another test.
    for index, fault in enumerate(faults):
        if fault not in NO_PACKAGES:
            continue
        for position, kind in enumerate(slices[index]):
            if kind not in PACKAGE_CHANGES:
                continue
            other = next(
                i for i, f in enumerate(faults) if f not in NO_PACKAGES and slices[i][0] not in PACKAGE_CHANGES
            )
            slices[index][position], slices[other][0] = slices[other][0], kind
    names = [name for name, _ in HOSTS]
    plan_tests = []
    for index, fault in enumerate(faults):
        host = rng.choice(names)
        others = [name for name in names if name != host]
        changes = [_change(rng, kind, index, number, others) for number, kind in enumerate(slices[index])]
        _no_chmod_of_removed_files(changes)
        plan_tests.append(
            {"index": index, "name": f"test_{index:04d}", "host": host, "fault": fault, "changes": changes}
        )
    return {"profile": profile.name, "seed": seed, "hosts": dict(HOSTS), "tests": plan_tests}
