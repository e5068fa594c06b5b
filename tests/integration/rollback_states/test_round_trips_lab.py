"""The round trips of a user or group add with its rollback, counted on a lab host (#33: at shell speed).

pytest-mh's side of the bench runs ``useradd`` in the test and ``userdel`` in its teardown: two
round trips. Ours, from ``host.ansible.run`` to the end of the test scope's undo, counted at the
transport (each command or script of the command agent) and the module executor (each module
call, and on the warm executor each request to its agent): on the warm executor over ssh, the
module call, which carries the probe of the account with the journal's entry (the agent runs it
right before the module), and the undo (one command, which also writes the entry's done mark):
two. On the standard executor the probe with the entry is a command of its own: three. A
regression that adds a round trip fails here.

A file change (``copy``) with its rollback: the agent's snapshot script, which also writes the
journal's entry, the module call, and the agent's restore script, which also writes the done mark:
three (five when each journal line was a command of its own). ``mh_ansible.rollback.write``
(``fs.write``) snapshots in its own call: the entry, the module call, the restore with the mark.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_mh_ansible._private.ansible.executor import StandardExecutor
from pytest_mh_ansible._private.ansible.inventory import Inventory
from pytest_mh_ansible._private.ansible.transport import AnsibleTransport
from pytest_mh_ansible._private.ansible.warm import WarmExecutor, _AgentPool
from pytest_mh_ansible._private.rollback.host_journal import JOURNAL_DIR, RUN_ID, HostJournal, JournalFile, pending
from pytest_mh_ansible._private.rollback.inverses import JournalRecorder
from pytest_mh_ansible.conn import Connection
from pytest_mh_ansible.host import MultihostHost
from pytest_mh_ansible.lab import Lab
from pytest_mh_ansible.modules import HostModules
from pytest_mh_ansible.rollback import RollbackJournal

pytestmark = pytest.mark.integration

# Round trips from the call to the end of its undo. Warm: the module call (with the probe and the entry),
# the undo (+ its mark). Standard: probe + entry, the module call, the undo (+ its mark).
EXPECTED = {"warm": 2, "standard": 3}


class _Trips:
    """What went to the host, in order: ``("exec", command)``, ``("script", ...)``, ``("module", name)``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def wrap(self, target: object, name: str, kind: str, what: Callable[..., str]) -> None:
        inner = getattr(target, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            if kind != "module":
                self.calls.append((kind, what(*args, **kwargs)))
                return inner(*args, **kwargs)
            # A module call is counted once it is done: what it runs on the host before the module
            # (the standard executor's probe over the connection) comes first, as on the host.
            try:
                return inner(*args, **kwargs)
            finally:
                self.calls.append((kind, what(*args, **kwargs)))

        setattr(target, name, counted)


Counted = tuple[HostModules, Connection, RollbackJournal, HostJournal, _Trips, StandardExecutor, MultihostHost]


@pytest.fixture(params=["warm", "standard"])
def counted_host(states_lab: Lab, request: pytest.FixtureRequest) -> Iterator[Counted]:
    """server1 of the lab with a rollback journal and a journal on the host, every round trip counted."""
    inventory = Inventory.load([str(states_lab.inventory_path)])
    variables = inventory.host("server1").variables
    host = MultihostHost("server1", roles=(), domain="default", variables=variables)
    trips = _Trips()
    transport = AnsibleTransport("server1", variables, command_agent=True)
    trips.wrap(transport, "exec", "exec", lambda command, **kw: str(command))
    trips.wrap(transport, "script", "script", lambda source, request: str(request))
    trips.wrap(transport, "put", "put", lambda local, remote: str(remote))
    trips.wrap(transport, "get", "get", lambda remote, local: str(remote))
    conn = Connection("server1", variables, transport=transport)
    executor = WarmExecutor(inventory, default="warm") if request.param == "warm" else StandardExecutor(inventory)
    trips.wrap(executor, "run", "module", lambda name, module, *args, **kwargs: str(module))
    pool_call = _AgentPool._call

    def agent_request(pool: _AgentPool, *args: Any) -> Any:
        trips.calls.append(("agent", str(args[-1][0])))  # (key, label, action, become, (op, header, payload))
        return pool_call(pool, *args)

    journal = RollbackJournal()
    persist = HostJournal(f"lab/{os.getpid()}/{RUN_ID}")
    journal.on_close.append(lambda scope: persist.flush())
    modules = HostModules(host, executor, recorder=JournalRecorder(journal, persist=persist))
    services = SimpleNamespace(connection=lambda: conn, playbooks=None, modules=modules, journal=journal)
    host._mh_attach(services)  # type: ignore[arg-type]
    try:
        conn.run("true")  # the command agent and the warm agent start here, not in the counts
        modules.run("ansible.builtin.ping")
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_AgentPool, "_call", agent_request)
            yield modules, conn, journal, persist, trips, executor, host
    finally:
        persist.finish(host)
        executor.close()
        conn.close()


@pytest.mark.parametrize(
    ("module", "name", "database", "undo"),
    [
        ("ansible.builtin.user", "mhrtuser", "passwd", "userdel"),
        ("ansible.builtin.group", "mhrtgroup", "group", "groupdel"),
    ],
    ids=["user", "group"],
)
def test_round_trips__an_account_add_with_its_rollback__two_warm_three_standard(
    counted_host: Counted,
    module: str,
    name: str,
    database: str,
    undo: str,
) -> None:
    modules, conn, journal, persist, trips, executor, _host = counted_host
    warm = isinstance(executor, WarmExecutor)
    assert conn.run(f"getent {database} {name}", raise_on_error=False).rc == 2
    args: dict[str, Any] = {"name": name, **({"create_home": True} if database == "passwd" else {})}
    for attempt in range(2):  # the second time with a done mark of the first left to carry
        trips.calls.clear()
        journal.open("test")
        assert modules.run(module, args).changed
        made = [call for call in trips.calls if call[0] != "agent"]
        journal.close("test")
        # On the warm executor, the module call is one request to its agent (no step of the action's own).
        requests = [call for call in trips.calls if call[0] == "agent"]
        calls = [call for call in trips.calls if call[0] != "agent"]
        assert requests == ([("agent", "run")] if warm else []), f"attempt {attempt}: {trips.calls}"
        assert len(calls) == EXPECTED["warm" if warm else "standard"], f"attempt {attempt}: {calls}"
        if warm:
            assert executor.last_before == "carried"  # type: ignore[attr-defined]
            assert calls[0] == ("module", module)  # with the probe and the journal's entry
            assert len(made) == 1
        else:
            assert calls[0][0] == "exec"
            assert "getent" in calls[0][1]
            assert "mh-journal-written" in calls[0][1]  # the journal's entry, in the probe's command
            assert calls[1] == ("module", module)
            assert len(made) == 2
        assert calls[-1][0] == "exec"
        assert undo in calls[-1][1]
        assert "done" in calls[-1][1]  # the mark, in the undo's command
        entries = JournalFile(persist.path, conn.run(f"cat {persist.path}").stdout).entries
        assert entries[-1]["op"] == f"{module} name={name}"
        assert entries[-1]["steps"][0]["state"]["probe"]  # the probe's output, kept for a later session
        trips.calls.clear()
    left = conn.run(f"cat {persist.path}").stdout
    assert pending(JournalFile(persist.path, left)) == []
    assert conn.run(f"getent {database} {name}", raise_on_error=False).rc == 2
    if database == "passwd":
        assert conn.run(f"test -e /home/{name}", raise_on_error=False).rc == 1


def test_round_trips__a_file_change_with_its_rollback__the_journals_lines_ride_with_the_agents_scripts(
    counted_host: Counted,
) -> None:
    """A copy with its rollback: the snapshot's script writes the entry, the restore's script its done mark.

    Before the change, one script (the snapshot, then the entry with the marks queued for the host);
    the module call; after it, one script (the restore, then the mark): no command of the journal's
    own, where each line was one before. The file holds the lines ``HostJournal.begin`` writes, 0600
    in a 0700 directory.
    """
    modules, conn, journal, persist, trips, _executor, host = counted_host
    dest = "/etc/mh-round-trips.conf"
    conn.run(f"rm -f {dest}")
    persist.done(host, 9999)  # another change's mark, queued: it goes with the entry
    for attempt in range(2):
        trips.calls.clear()
        journal.open("test")
        assert modules.run("ansible.builtin.copy", {"dest": dest, "content": f"attempt {attempt}\n"}).changed
        before = [call for call in trips.calls if call[0] in ("exec", "script")]
        assert [kind for kind, _ in before] == ["script"], f"attempt {attempt}: {trips.calls}"
        assert "'journal'" in before[0][1]
        written = JournalFile(persist.path, conn.run(f"cat {persist.path}").stdout)
        assert written.entries[-1]["op"] == f"ansible.builtin.copy dest={dest}"
        assert written.entries[-1]["steps"][0]["do"] == "restore"
        if attempt == 0:
            assert written.done == {9999}
        modes = conn.run(f"stat -c %a {JOURNAL_DIR} {persist.path}").stdout.split()
        assert modes == ["700", "600"]
        trips.calls.clear()
        journal.close("test")
        after = [call for call in trips.calls if call[0] in ("exec", "script", "module")]
        assert [kind for kind, _ in after] == ["script"], f"attempt {attempt}: {trips.calls}"
        assert '{"done":' in after[0][1]
        lines = conn.run(f"cat {persist.path}").stdout.splitlines()
        assert json.loads(lines[-1]) == {"done": [written.entries[-1]["n"]]}
        assert pending(JournalFile(persist.path, "\n".join(lines))) == []
        assert conn.run(f"test -e {dest}", raise_on_error=False).rc == 1


def test_round_trips__fs_writes_module_takes_its_own_snapshot__the_done_mark_rides_with_the_restore(
    counted_host: Counted,
) -> None:
    """``mh_ansible.rollback.write`` (``fs.write``) snapshots in its own call: its entry is a command before it
    (no script of the journal's to ride with), and its restore, by the agent's script, writes the done mark."""
    modules, conn, journal, persist, trips, _executor, _host = counted_host
    dest = "/etc/mh-round-trips-write.conf"
    conn.run(f"rm -f {dest}")
    trips.calls.clear()
    journal.open("test")
    assert modules.run("mh_ansible.rollback.write", {"dest": dest, "content": "x\n"}).changed
    before = [kind for kind, _ in trips.calls if kind in ("exec", "script")]
    assert before == ["exec"], trips.calls  # the entry
    trips.calls.clear()
    journal.close("test")
    after = [call for call in trips.calls if call[0] in ("exec", "script", "module")]
    assert [kind for kind, _ in after] == ["script"], trips.calls
    assert '{"done":' in after[0][1]
    assert pending(JournalFile(persist.path, conn.run(f"cat {persist.path}").stdout)) == []
    assert conn.run(f"test -e {dest}", raise_on_error=False).rc == 1
