"""Generated pytest suites of ``bench/compare.py``: one directory per tool variant, the same test files in each.

The test files call a small ``ops`` fixture (write a file, restart a service, add a user, run a command)
and a ``TOPOLOGY`` mark; each variant's ``conftest.py`` and ``bench_topology.py`` implement them with
its own tool:

* ``pytest-mh``: pytest-mh 1.0.x public API -- ``MultihostConfig`` set through ``pytest_plugin_registered``,
  ``LinuxFileSystem.write``, ``SystemdServices.restart`` (role utilities, postponed setup: pytest-mh's
  fastest documented mode) and a ``useradd``/``userdel`` utility of the bench's own (pytest-mh has none).
* ``ours-raw``: pytest-mh-ansible, ``host.conn.run`` with a hand-made backup/undo fixture.
* ``ours-mod``: pytest-mh-ansible, ``host.ansible.run(...)``; the rollback journal undoes every change.
  Run with ``--mh-executor=warm`` (modules in a warm agent on the target).
* ``ours-mod-standard``: the same files as ``ours-mod``, run with ``--mh-executor=standard``
  (a new Python per module, as ansible-playbook).

Every run loads ``bench_timing`` (``-p bench_timing``), which writes per-test times to ``$BENCH_OUT``, and
for our tool what the warm executor logged: agent starts, payloads served warm, fallbacks to the standard path.
"""

from __future__ import annotations

import random
import textwrap
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "MODULES",
    "MODULE_VARIANTS",
    "OPERATIONS",
    "PYTEST_MH_VARIANTS",
    "RENDERED",
    "TEMPLATE",
    "VARIANTS",
    "write_variant",
]

# The operations the ops run times, each as a test kind of its own (besides "empty").
OPERATIONS = (
    "write",
    "writenew",
    "restart",
    "stop",
    "useradd",
    "groupadd",
    "lineedit",
    "template",
    "inifile",
    "mkdir",
    "pkginstall",
)

# What host.ansible.run calls for each operation (the ours-mod variants); the tables name them.
MODULES: dict[str, str] = {
    "write": "ansible.builtin.copy",
    "writenew": "ansible.builtin.copy",
    "restart": "ansible.builtin.service",
    "stop": "ansible.builtin.service",
    "useradd": "ansible.builtin.user",
    "groupadd": "ansible.builtin.group",
    "lineedit": "ansible.builtin.lineinfile",
    "template": "ansible.builtin.template",
    "inifile": "community.general.ini_file",
    "mkdir": "ansible.builtin.file",
    "pkginstall": "ansible.builtin.apt",
}

# variant key -> label in the tables
VARIANTS: dict[str, str] = {
    "pytest-mh-eager": "pytest-mh (eager, its default)",
    "pytest-mh": "pytest-mh (lazy)",
    "ours-util": "ours (utilities, the default path)",
    "ours-raw": "ours (raw commands)",
    "ours-mod": "ours (host.ansible.run, warm)",
    "ours-mod-standard": "ours (host.ansible.run, standard)",
}

# the variants that run pytest-mh (in its venv); the bench compares against the better of them per figure
PYTEST_MH_VARIANTS = ("pytest-mh-eager", "pytest-mh")

# executor -> the variant that runs the module suite with it (``--mh-executor``)
MODULE_VARIANTS: dict[str, str] = {"warm": "ours-mod", "standard": "ours-mod-standard"}

SERVICE = "blsvc.service"
CONF = "/etc/bl-app.conf"
# an ini file of the servers (compare_lab writes it): the ini row sets "value" in section "main"
INI = "/etc/bl-app.ini"
INI_START = "[main]\nvalue = 0\n"
# the template row: ansible.builtin.template renders TEMPLATE (a file next to each variant's conftest.py)
# over CONF; the other variants write RENDERED, what it renders to, with their file-write utility
TEMPLATE = "# {{ 'rendered' | upper }} by the bench\nvalue = {{ 6 * 7 }}\n"
RENDERED = "# RENDERED by the bench\nvalue = 42\n"
TEMPLATE_FILE = "bl-app.conf.j2"
# the directory row: a new directory under /etc, removed again by the undo
DIRECTORY = "/etc/bl-dir-{n}"
# a package that is not installed on the lab hosts; its .deb is put in apt's cache first (compare_lab)
PACKAGE = "tree"

TIMING_PLUGIN = '''\
"""Per-test timing of the compare bench (loaded with -p bench_timing); writes $BENCH_OUT at session end."""

from __future__ import annotations

import json
import logging
import os
import re
import time
from typing import Any

import pytest

DATA: dict[str, Any] = {"tests": {}, "first_call": None, "collected": None, "outcomes": {}, "extra": {}}
WARM: dict[str, Any] = {"agent_starts_ms": [], "served": 0, "fallbacks": {}, "other": []}
_STARTED = re.compile(r"warm agent started \\(pid \\d+, .*\\) in (\\d+) ms")
_FALLBACK = "module payload on the standard path: "


class _WarmLog(logging.Handler):
    """What pytest-mh-ansible's warm executor logs (nothing arrives here under pytest-mh)."""

    def emit(self, record: logging.LogRecord) -> None:
        if isinstance(record.msg, str) and record.msg.startswith("%s: warm module call"):
            WARM["served"] += 1
            return
        if record.levelno < logging.INFO:
            return
        message = record.getMessage()
        match = _STARTED.search(message)
        if match:
            WARM["agent_starts_ms"].append(float(match.group(1)))
        elif _FALLBACK in message:
            reason = message.split(_FALLBACK, 1)[1]
            WARM["fallbacks"][reason] = WARM["fallbacks"].get(reason, 0) + 1
        elif "warm agent" in message or record.levelno >= logging.WARNING:
            WARM["other"].append(f"{record.levelname}: {message}")


def record(key: str, value: Any) -> None:
    """Extra data of a test (the raw-command timings)."""
    DATA["extra"][key] = value


def pytest_configure(config: pytest.Config) -> None:
    # A child of the logger pytest-mh-ansible's log tap sets to DEBUG for the session: no level change here.
    logging.getLogger("pytest_mh_ansible.modules").addHandler(_WarmLog(logging.DEBUG))


def pytest_collection_finish(session: pytest.Session) -> None:
    DATA["collected"] = time.time()


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    DATA["tests"].setdefault(nodeid, {})["start"] = time.perf_counter()


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    DATA["tests"].setdefault(nodeid, {})["finish"] = time.perf_counter()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    if DATA["first_call"] is None:
        DATA["first_call"] = time.time()
    start = time.perf_counter()
    yield
    DATA["tests"].setdefault(item.nodeid, {})["call"] = time.perf_counter() - start


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or report.outcome != "passed":
        previous = DATA["outcomes"].get(report.nodeid)
        if previous in (None, "passed"):
            DATA["outcomes"][report.nodeid] = report.outcome


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    DATA["exitstatus"] = int(exitstatus)
    DATA["warm"] = WARM
    # an xdist worker (pools.py's -n runs) writes next to the controller's file, not over it
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    path = os.environ["BENCH_OUT"] + (f".{worker}" if worker else "")
    with open(path, "w") as f:
        json.dump(DATA, f)
'''

PYTEST_MH_TOPOLOGY = """\
from pytest_mh import Topology, TopologyDomain, TopologyMark

TOPOLOGY = TopologyMark(
    "bench",
    Topology(TopologyDomain("default", client=1, server=2)),
    fixtures=dict(client="default.client[0]", server1="default.server[0]", server2="default.server[1]"),
)
"""

OURS_TOPOLOGY = PYTEST_MH_TOPOLOGY.replace("from pytest_mh import", "from pytest_mh_ansible import")

# The package row's install and undo, the same source in both generated conftests (each must stand alone).
PACKAGE_UNDO = '''\
# what the package row runs on both sides (the same install, the same undo)
INSTALLED = "dpkg-query -W -f='${db:Status-Abbrev} ${Package}\\n' | sed -n 's/^ii *//p'"
APT_INSTALL = "DEBIAN_FRONTEND=noninteractive apt-get install -y -q"
STATES = "/var/lib/apt/extended_states"


def purge_command(names: list[str]) -> str:
    """dpkg --purge of ``names``, then their stanzas out of apt's marks (only if the file has one of them)."""
    quoted = " ".join(shlex.quote(n) for n in names)
    marks = " ".join("-e " + shlex.quote(f"Package: {n}") for n in names)
    ranges = " ".join("-e " + shlex.quote(f"/^Package: {n}$/,/^$/d") for n in names)
    return (
        f"DEBIAN_FRONTEND=noninteractive dpkg --purge {quoted} >/dev/null"
        f" && if [ -f {STATES} ] && grep -qxF {marks} {STATES}; then sed -i {ranges} {STATES}; fi"
    )
'''

PYTEST_MH_CONFTEST = '''\
"""pytest-mh side of the bench: configuration classes, role utilities and the ``ops`` fixture."""

from __future__ import annotations

import shlex
from typing import Any

import pytest
from pytest_mh import (
    MultihostConfig,
    MultihostDomain,
    MultihostHost,
    MultihostPlugin,
    MultihostRole,
    MultihostUtility,
)
from pytest_mh.utils.fs import LinuxFileSystem
from pytest_mh.utils.services import SystemdServices

pytest_plugins = ("pytest_mh",)

# PACKAGE_UNDO

LAZY = True  # the bench writes False here for its eager variant (pytest-mh's default)
RENDERED = "RENDERED_TEXT"  # the bench writes the rendered template here


class BenchUsers(MultihostUtility[MultihostHost]):
    """useradd/groupadd in the test, userdel --remove/groupdel in the role teardown (pytest-mh bundles no
    user utility)."""

    def __init__(self, host: MultihostHost) -> None:
        super().__init__(host)
        self._undo: list[str] = []

    def useradd(self, name: str) -> None:
        self.host.conn.run(f"useradd --create-home {name}")
        self._undo.append(f"userdel --remove {name}")

    def groupadd(self, name: str) -> None:
        self.host.conn.run(f"groupadd {name}")
        self._undo.append(f"groupdel {name}")

    def teardown(self) -> None:
        for command in reversed(self._undo):
            self.host.conn.run(command)
        self._undo.clear()
        super().teardown()


class BenchPackages(MultihostUtility[MultihostHost]):
    """apt-get install in the test; in the role teardown what it brought is purged as pytest-mh-ansible undoes
    an install (pytest-mh bundles no package utility): ``dpkg --purge`` of the new packages, then their
    auto-installed marks dropped from apt's extended_states."""

    def __init__(self, host: MultihostHost) -> None:
        super().__init__(host)
        self._installed: list[str] = []

    def install(self, name: str) -> None:
        before = set(self.host.conn.run(INSTALLED).stdout_lines)
        after = self.host.conn.run(f"{APT_INSTALL} {name} >/dev/null && {INSTALLED}").stdout_lines
        self._installed.extend(sorted(set(after) - before))

    def teardown(self) -> None:
        if self._installed:
            self.host.conn.run(purge_command(self._installed))
        self._installed.clear()
        super().teardown()


class BenchRole(MultihostRole[MultihostHost]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fs = LinuxFileSystem(self.host)
        self.svc = SystemdServices(self.host)
        self.users = BenchUsers(self.host)
        self.pkgs = BenchPackages(self.host)
        if LAZY:  # pytest-mh's lazy mode: a utility's setup runs on its first use only
            self.fs.postpone_setup()
            self.svc.postpone_setup()
            self.users.postpone_setup()
            self.pkgs.postpone_setup()


class BenchDomain(MultihostDomain["BenchConfig"]):
    @property
    def role_to_host_class(self) -> dict[str, type[MultihostHost]]:
        return {"*": MultihostHost}

    @property
    def role_to_role_class(self) -> dict[str, type[MultihostRole]]:
        return {"*": BenchRole}


class BenchConfig(MultihostConfig):
    @property
    def id_to_domain_class(self) -> dict[str, type[MultihostDomain]]:
        return {"*": BenchDomain}


def pytest_plugin_registered(plugin: object) -> None:
    if isinstance(plugin, MultihostPlugin):
        plugin.config_class = BenchConfig


class Ops:
    def run(self, role: BenchRole, command: str) -> str:
        return "\\n".join(role.host.conn.run(command).stdout_lines)

    def write(self, role: BenchRole, path: str, content: str) -> None:
        role.fs.write(path, content)

    def restart(self, role: BenchRole, service: str) -> None:
        role.svc.restart(service)

    def stop(self, role: BenchRole, service: str) -> None:
        role.svc.stop(service)

    def useradd(self, role: BenchRole, name: str) -> None:
        role.users.useradd(name)

    def groupadd(self, role: BenchRole, name: str) -> None:
        role.users.groupadd(name)

    def lineedit(self, role: BenchRole, path: str, key: str, value: str) -> None:
        # LinuxFileSystem.sed backs the file up first (restored at teardown), then runs sed
        role.fs.sed(f"s/^{key} = .*/{key} = {value}/", path, args=["-i"])

    def template(self, role: BenchRole, path: str) -> None:
        # the rendered text (what ansible.builtin.template makes of the template), written with a backup
        role.fs.write(path, RENDERED)

    def inifile(self, role: BenchRole, path: str, section: str, option: str, value: str) -> None:
        # sed on the option's line within the section, the file backed up first
        role.fs.sed(f"/^\\\\[{section}\\\\]/,/^\\\\[/ s/^{option} = .*/{option} = {value}/", path, args=["-i"])

    def mkdir(self, role: BenchRole, path: str) -> None:
        # LinuxFileSystem.mkdir: the path backed up (here: to be removed at teardown), then created
        role.fs.mkdir(path)

    def pkginstall(self, role: BenchRole, name: str) -> None:
        role.pkgs.install(name)


@pytest.fixture
def ops() -> Ops:
    return Ops()
'''

OURS_RAW_CONFTEST = '''\
"""pytest-mh-ansible side, raw commands: the same operations by hand over host.conn.run, undone in teardown."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from typing import Any

import pytest

RENDERED = "RENDERED_TEXT"  # the bench writes the rendered template here

# PACKAGE_UNDO


class Ops:
    """Mirrors pytest-mh's commands: backup, change; undo after the test, newest first."""

    def __init__(self) -> None:
        self.undo: list[Callable[[], None]] = []

    def run(self, role: Any, command: str) -> str:
        return str(role.host.conn.run(command).stdout.strip())

    def write(self, role: Any, path: str, content: str) -> None:
        conn = role.host.conn
        qpath = shlex.quote(path)
        saved = conn.run(
            f"if [ -e {qpath} ]; then t=$(mktemp /tmp/bl.rollback.XXXXXXXX) && cp --force --archive {qpath} $t"
            " && echo $t; fi"
        ).stdout.strip()
        conn.run(f"cat > {qpath}", input=content)
        if saved:
            self.undo.append(lambda: conn.run(f"cp --force --archive {saved} {qpath} && rm --force {saved}"))
        else:
            self.undo.append(lambda: conn.run(f"rm --force {qpath}"))

    def restart(self, role: Any, service: str) -> None:
        conn = role.host.conn
        active = conn.run(f"systemctl is-active {service}", raise_on_error=False).rc == 0
        conn.run(f"systemctl reset-failed {service}; systemctl restart {service}")
        undo = f"systemctl stop {service}" + (f" && systemctl start {service}" if active else "")
        self.undo.append(lambda: conn.run(undo))

    def stop(self, role: Any, service: str) -> None:
        conn = role.host.conn
        active = conn.run(f"systemctl is-active {service}", raise_on_error=False).rc == 0
        conn.run(f"systemctl stop {service}")
        if active:
            self.undo.append(lambda: conn.run(f"systemctl start {service}"))

    def useradd(self, role: Any, name: str) -> None:
        conn = role.host.conn
        conn.run(f"useradd --create-home {name}")
        self.undo.append(lambda: conn.run(f"userdel --remove {name}"))

    def groupadd(self, role: Any, name: str) -> None:
        conn = role.host.conn
        conn.run(f"groupadd {name}")
        self.undo.append(lambda: conn.run(f"groupdel {name}"))

    def lineedit(self, role: Any, path: str, key: str, value: str) -> None:
        conn = role.host.conn
        qpath = shlex.quote(path)
        saved = conn.run(f"t=$(mktemp /tmp/bl.rollback.XXXXXXXX) && cp --force --archive {qpath} $t && echo $t").stdout
        conn.run(shlex.join(["sed", "-i", f"s/^{key} = .*/{key} = {value}/", path]))
        saved = saved.strip()
        self.undo.append(lambda: conn.run(f"cp --force --archive {saved} {qpath} && rm --force {saved}"))

    def template(self, role: Any, path: str) -> None:
        self.write(role, path, RENDERED)

    def inifile(self, role: Any, path: str, section: str, option: str, value: str) -> None:
        conn = role.host.conn
        qpath = shlex.quote(path)
        saved = conn.run(f"t=$(mktemp /tmp/bl.rollback.XXXXXXXX) && cp --force --archive {qpath} $t && echo $t").stdout
        edit = f"/^\\\\[{section}\\\\]/,/^\\\\[/ s/^{option} = .*/{option} = {value}/"
        conn.run(shlex.join(["sed", "-i", edit, path]))
        saved = saved.strip()
        self.undo.append(lambda: conn.run(f"cp --force --archive {saved} {qpath} && rm --force {saved}"))

    def mkdir(self, role: Any, path: str) -> None:
        conn = role.host.conn
        qpath = shlex.quote(path)
        conn.run(f"mkdir {qpath}")
        self.undo.append(lambda: conn.run(f"rm --force --recursive {qpath}"))

    def pkginstall(self, role: Any, name: str) -> None:
        conn = role.host.conn
        before = set(conn.run(INSTALLED).stdout.splitlines())
        after = conn.run(f"{APT_INSTALL} {name} >/dev/null && {INSTALLED}").stdout.splitlines()
        new = sorted(set(after) - before)
        if new:
            self.undo.append(lambda: conn.run(purge_command(new)))


@pytest.fixture
def ops() -> Iterator[Ops]:
    o = Ops()
    yield o
    for undo in reversed(o.undo):
        undo()
'''
PYTEST_MH_CONFTEST = PYTEST_MH_CONFTEST.replace("# PACKAGE_UNDO\n", PACKAGE_UNDO)
OURS_RAW_CONFTEST = OURS_RAW_CONFTEST.replace("# PACKAGE_UNDO\n", PACKAGE_UNDO)

OURS_MOD_CONFTEST = '''\
"""pytest-mh-ansible side, modules: host.ansible.run; the rollback journal undoes every change after the test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

TEMPLATE = str(Path(__file__).with_name("TEMPLATE_FILE"))


class Ops:
    def run(self, role: Any, command: str) -> str:
        return str(role.host.conn.run(command).stdout.strip())

    def write(self, role: Any, path: str, content: str) -> None:
        role.host.ansible.run("ansible.builtin.copy", dest=path, content=content)

    def restart(self, role: Any, service: str) -> None:
        role.host.ansible.run("ansible.builtin.service", name=service, state="restarted")

    def stop(self, role: Any, service: str) -> None:
        role.host.ansible.run("ansible.builtin.service", name=service, state="stopped")

    def useradd(self, role: Any, name: str) -> None:
        role.host.ansible.run("ansible.builtin.user", name=name, state="present")

    def groupadd(self, role: Any, name: str) -> None:
        role.host.ansible.run("ansible.builtin.group", name=name, state="present")

    def lineedit(self, role: Any, path: str, key: str, value: str) -> None:
        role.host.ansible.run("ansible.builtin.lineinfile", path=path, regexp=f"^{key} = ", line=f"{key} = {value}")

    def template(self, role: Any, path: str) -> None:
        role.host.ansible.run("ansible.builtin.template", src=TEMPLATE, dest=path)

    def inifile(self, role: Any, path: str, section: str, option: str, value: str) -> None:
        role.host.ansible.run("community.general.ini_file", path=path, section=section, option=option, value=value)

    def mkdir(self, role: Any, path: str) -> None:
        role.host.ansible.run("ansible.builtin.file", path=path, state="directory")

    def pkginstall(self, role: Any, name: str) -> None:
        role.host.ansible.run("ansible.builtin.apt", name=name, state="present")


@pytest.fixture
def ops() -> Ops:
    return Ops()
'''

OURS_UTIL_CONFTEST = '''\
"""pytest-mh-ansible side, the bundled utilities (role.fs, role.svc, role.users): the product's default path."""

from __future__ import annotations

from typing import Any

import pytest

RENDERED = "RENDERED_TEXT"  # the bench writes the rendered template here


class Ops:
    def run(self, role: Any, command: str) -> str:
        return str(role.host.conn.run(command).stdout.strip())

    def write(self, role: Any, path: str, content: str) -> None:
        role.fs.write(path, content)

    def restart(self, role: Any, service: str) -> None:
        role.svc.restart(service)

    def stop(self, role: Any, service: str) -> None:
        role.svc.stop(service)

    def useradd(self, role: Any, name: str) -> None:
        role.users.add(name)

    def groupadd(self, role: Any, name: str) -> None:
        role.users.add_group(name)

    def lineedit(self, role: Any, path: str, key: str, value: str) -> None:
        role.config_files.line(path, f"{key} = {value}", regexp=f"^{key} = ")

    def template(self, role: Any, path: str) -> None:
        role.fs.write(path, RENDERED)  # no template utility: the rendered text, as the other variants write

    def inifile(self, role: Any, path: str, section: str, option: str, value: str) -> None:
        role.config_files.ini(path, section, option, value)

    def mkdir(self, role: Any, path: str) -> None:
        role.fs.mkdir(path)

    def pkginstall(self, role: Any, name: str) -> None:
        role.pkg.install(name)


@pytest.fixture
def ops() -> Ops:
    return Ops()
'''

HEADER = """\
import time

import pytest

import bench_timing
from bench_topology import TOPOLOGY
"""


def raw_test(warmup: int, calls: int, idle_calls: int = 0) -> str:
    """One test: ``true`` on server1, ``warmup`` untimed calls, then ``calls`` timed ones back to back,
    then ``idle_calls`` each after 0.1 s of idle and ``idle_calls // 4`` (at least 1) after 1 s (ms, in order)."""
    return HEADER + textwrap.dedent(
        f"""

        @pytest.mark.topology(TOPOLOGY)
        def test_raw(server1):
            conn = server1.host.conn
            for _ in range({warmup}):
                conn.run("true")
            times = []
            for _ in range({calls}):
                start = time.perf_counter()
                conn.run("true")
                times.append((time.perf_counter() - start) * 1000)
            bench_timing.record("raw_ms", times)
            for key, gap, count in (("idle100_ms", 0.1, {idle_calls}), ("idle1000_ms", 1.0, max(1, {idle_calls} // 4))):
                idle = []
                for _ in range(count if {idle_calls} else 0):
                    time.sleep(gap)
                    start = time.perf_counter()
                    conn.run("true")
                    idle.append((time.perf_counter() - start) * 1000)
                bench_timing.record(key, idle)
        """
    )


def ops_tests(reps: int, seed: int, ops: Sequence[str] | None = None) -> str:
    """``reps`` tests of each kind (empty, and the operations ``ops``: by default all of write, writenew,
    restart, stop, useradd, groupadd, lineedit, pkginstall) on server1, shuffled.

    A first test (``test_warmup``, not counted) does each operation once, so that one-time costs
    (pytest-mh-ansible's first module call: the warm agent's start, fact gathering for ``service``)
    do not land in the median of whichever kind happens to come first.
    """
    unknown = sorted(set(ops or ()) - set(OPERATIONS))
    if unknown:
        raise ValueError(f"ops_tests: unknown operations {unknown}; known: {', '.join(OPERATIONS)}")
    kinds = ["empty", *(kind for kind in OPERATIONS if ops is None or kind in ops)]
    order = [(kind, i) for kind in kinds for i in range(reps)]
    random.Random(seed).shuffle(order)
    bodies = {
        "empty": "pass",
        "write": f'ops.write(server1, "{CONF}", "value = {{n}}\\n")',
        "writenew": 'ops.write(server1, "/etc/bl-new-{n}.conf", "value = {n}\\n")',
        "restart": f'ops.restart(server1, "{SERVICE}")',
        "stop": f'ops.stop(server1, "{SERVICE}")',
        "useradd": 'ops.useradd(server1, "bluser")',
        "groupadd": 'ops.groupadd(server1, "blgroup")',
        "lineedit": f'ops.lineedit(server1, "{CONF}", "value", "{{n}}")',
        "template": f'ops.template(server1, "{CONF}")',
        "inifile": f'ops.inifile(server1, "{INI}", "main", "value", "{{n}}")',
        "mkdir": f'ops.mkdir(server1, "{DIRECTORY}")',
        "pkginstall": f'ops.pkginstall(server1, "{PACKAGE}")',
    }
    # The line edit first: on a path no write of the warm-up has snapshotted yet, its journal calls the
    # snapshot module, whose payload (built once per process) would otherwise fall into a timed test.
    warmup_kinds = sorted(kinds[1:], key=lambda kind: kind != "lineedit") or ["empty"]
    warmup = "\n    ".join(bodies[kind].replace("{n}", "warmup") for kind in warmup_kinds)
    out = [HEADER, f"\n\n@pytest.mark.topology(TOPOLOGY)\ndef test_warmup(ops, server1):\n    {warmup}\n"]
    for n, (kind, _) in enumerate(order):
        body = bodies[kind].replace("{n}", str(n))
        out.append(f"\n\n@pytest.mark.topology(TOPOLOGY)\ndef test_{n:03d}_{kind}(ops, server1):\n    {body}\n")
    return "".join(out)


def suite_tests(count: int) -> str:
    """``count`` tests over client + 2 servers: a file write, a restart or a useradd (alternating), 2 commands."""
    out = [HEADER]
    for n in range(count):
        second = f'ops.restart(server2, "{SERVICE}")' if n % 2 == 0 else 'ops.useradd(server2, "bluser")'
        out.append(
            f"\n\n@pytest.mark.topology(TOPOLOGY)\ndef test_{n:03d}(ops, client, server1, server2):\n"
            f'    ops.write(server1, "{CONF}", "value = {n}\\n")\n'
            f"    {second}\n"
            f'    ops.run(client, "hostname")\n'
            f'    ops.run(server1, "cat {CONF}")\n'
        )
    return "".join(out)


def start_test() -> str:
    """One empty test over the 3-host topology (session start)."""
    return HEADER + "\n\n@pytest.mark.topology(TOPOLOGY)\ndef test_start(client, server1, server2):\n    pass\n"


def settings_test(raw_calls: int, module_calls: int) -> str:
    """Raw ``true`` and ``ansible.builtin.ping`` on server1 (ours only), times in ms."""
    return HEADER + textwrap.dedent(
        f"""

        @pytest.mark.topology(TOPOLOGY)
        def test_settings(server1):
            host = server1.host
            for _ in range(5):
                host.conn.run("true")
            raw = []
            for _ in range({raw_calls}):
                start = time.perf_counter()
                host.conn.run("true")
                raw.append((time.perf_counter() - start) * 1000)
            host.ansible.run("ansible.builtin.ping")
            mod = []
            for _ in range({module_calls}):
                start = time.perf_counter()
                host.ansible.run("ansible.builtin.ping")
                mod.append((time.perf_counter() - start) * 1000)
            bench_timing.record("raw_ms", raw)
            bench_timing.record("module_ms", mod)
        """
    )


def write_variant(directory: Path, variant: str) -> Path:
    """Create ``directory`` with the plugin, conftest and topology of ``variant``; the test files come later."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pytest.ini").write_text("[pytest]\nconsole_output_style = classic\n")
    (directory / "bench_timing.py").write_text(TIMING_PLUGIN)
    conftest = {
        "pytest-mh-eager": PYTEST_MH_CONFTEST.replace("LAZY = True", "LAZY = False"),
        "pytest-mh": PYTEST_MH_CONFTEST,
        "ours-util": OURS_UTIL_CONFTEST,
        "ours-raw": OURS_RAW_CONFTEST,
        "ours-mod": OURS_MOD_CONFTEST,
        "ours-mod-standard": OURS_MOD_CONFTEST,
    }[variant]
    conftest = conftest.replace('"RENDERED_TEXT"', repr(RENDERED)).replace("TEMPLATE_FILE", TEMPLATE_FILE)
    (directory / "conftest.py").write_text(conftest)
    (directory / TEMPLATE_FILE).write_text(TEMPLATE)
    topology = PYTEST_MH_TOPOLOGY if variant in PYTEST_MH_VARIANTS else OURS_TOPOLOGY
    (directory / "bench_topology.py").write_text(topology)
    return directory
