"""The round trips of a user or group add with its rollback, counted on a lab host (#33: at shell speed).

pytest-mh's side of the bench runs ``useradd`` in the test and ``userdel`` in its teardown: two
round trips. Ours, from ``host.ansible.run`` to the end of the test scope's undo, counted at the
transport (each command or script of the command agent) and the module executor (each module
call): the probe of the account with the journal's entry on the host (one command), the module
call, and the undo (one command, which also writes the entry's done mark). A regression that adds
a round trip fails here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_mh_ansible._private.ansible.inventory import Inventory
from pytest_mh_ansible._private.ansible.transport import AnsibleTransport
from pytest_mh_ansible._private.ansible.warm import WarmExecutor
from pytest_mh_ansible._private.rollback.host_journal import RUN_ID, HostJournal, JournalFile, pending
from pytest_mh_ansible._private.rollback.inverses import JournalRecorder
from pytest_mh_ansible.conn import Connection
from pytest_mh_ansible.host import MultihostHost
from pytest_mh_ansible.lab import Lab
from pytest_mh_ansible.modules import HostModules
from pytest_mh_ansible.rollback import RollbackJournal

pytestmark = pytest.mark.integration

# Round trips from the call to the end of its undo: probe + entry, the module call, the undo (+ its mark).
EXPECTED = 3


class _Trips:
    """What went to the host, in order: ``("exec", command)``, ``("script", ...)``, ``("module", name)``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def wrap(self, target: object, name: str, kind: str, what: Callable[..., str]) -> None:
        inner = getattr(target, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((kind, what(*args, **kwargs)))
            return inner(*args, **kwargs)

        setattr(target, name, counted)


@pytest.fixture
def counted_host(states_lab: Lab) -> Iterator[tuple[HostModules, Connection, RollbackJournal, HostJournal, _Trips]]:
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
    executor = WarmExecutor(inventory, default="warm")
    trips.wrap(executor, "run", "module", lambda name, module, *args, **kwargs: str(module))
    journal = RollbackJournal()
    persist = HostJournal(f"lab/{os.getpid()}/{RUN_ID}")
    journal.on_close.append(lambda scope: persist.flush())
    modules = HostModules(host, executor, recorder=JournalRecorder(journal, persist=persist))
    services = SimpleNamespace(connection=lambda: conn, playbooks=None, modules=modules, journal=journal)
    host._mh_attach(services)  # type: ignore[arg-type]
    try:
        conn.run("true")  # the command agent and the warm agent start here, not in the counts
        modules.run("ansible.builtin.ping")
        yield modules, conn, journal, persist, trips
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
def test_round_trips__an_account_add_with_its_rollback__three(
    counted_host: tuple[HostModules, Connection, RollbackJournal, HostJournal, _Trips],
    module: str,
    name: str,
    database: str,
    undo: str,
) -> None:
    modules, conn, journal, persist, trips = counted_host
    assert conn.run(f"getent {database} {name}", raise_on_error=False).rc == 2
    args: dict[str, Any] = {"name": name, **({"create_home": True} if database == "passwd" else {})}
    for attempt in range(2):  # the second time with a done mark of the first left to carry
        trips.calls.clear()
        journal.open("test")
        assert modules.run(module, args).changed
        made = list(trips.calls)
        journal.close("test")
        calls = list(trips.calls)
        assert len(calls) == EXPECTED, f"attempt {attempt}: {calls}"
        assert calls[0][0] == "exec"
        assert "getent" in calls[0][1]
        assert "mh-journal-written" in calls[0][1]  # the journal's entry, in the probe's command
        assert calls[1] == ("module", module)
        assert calls[2][0] == "exec"
        assert undo in calls[2][1]
        assert "done" in calls[2][1]  # the mark, in the undo's command
        assert len(made) == 2
    left = conn.run(f"cat {persist.path}").stdout
    assert pending(JournalFile(persist.path, left)) == []
    assert conn.run(f"getent {database} {name}", raise_on_error=False).rc == 2
    if database == "passwd":
        assert conn.run(f"test -e /home/{name}", raise_on_error=False).rc == 1
