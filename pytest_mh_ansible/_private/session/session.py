"""The multi-host session: inventory hosts, topology resolution and the topology/host life cycle."""

from __future__ import annotations

import logging
import os
import re
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Unpack

from ...conn import Connection, ProcessResult
from ...errors import HostUnreachableError, MultihostError, TeardownExceptionGroup
from ...host import HostServices, MultihostHost
from ...modules import HostModules
from ...multihost import MultihostFixture
from ...registry import Registry
from ...rollback import RollbackJournal
from ..ansible.executor_choice import ExecutorName, executor_for_host
from ..ansible.playbooks import PlaybookRunner
from ..rollback.host_journal import JOURNAL_DIR, RUN_ID, HostJournal
from ..rollback.inverses import JournalRecorder
from ..rollback.recovery import recover_host, session_gone
from ..teardown import run_all
from .assignment import Assignment, HostInfo, assign
from .connect import probe_all
from .leases import HostLeases, LeaseOwner
from .locks import HostLocks
from .reachability import DeadHosts, GuardedTransport

if TYPE_CHECKING:
    import pytest

    from ...marks import TopologyMark
    from ..ansible.executor import ModuleCallOptions
    from ..ansible.inventory import Inventory, InventoryHost
    from ..ansible.warm import WarmExecutor

__all__ = ["ActiveTopology", "MultihostSession", "NoEvents", "SessionEvents", "SessionOptions"]

log = logging.getLogger("pytest_mh_ansible")


def _controller_id() -> str:
    """This machine's id in lease and journal owners (as ``--mh-controller-id`` defaults to)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())


@dataclass(frozen=True)
class SessionOptions:
    """The settings of a session, from the command line, the ini file and the environment."""

    sources: tuple[str, ...]
    default_domain: str = "default"
    role_groups: dict[str, str] = field(default_factory=dict)  # inventory group -> role
    unreachable: str = "error"  # or "skip"
    vault_password_files: tuple[str, ...] = ()
    vault_ids: tuple[str, ...] = ()  # label@file, the file absolute
    playbook_dirs: tuple[str, ...] = ()
    executor: ExecutorName = "warm"  # how modules run (a host's mh_executor variable wins)
    lease_owner: LeaseOwner | None = None  # leases on the hosts (leases.py); None: no leases
    lease_ttl: float = 60
    lease_timeout: float = 600
    record_calls: bool = False  # keep every call that may change a host (--mh-export-playbooks)
    source_labels: tuple[str, ...] = ()  # ``sources`` as the user wrote them (``sources`` are absolute)

    @property
    def shown_sources(self) -> str:
        """The inventory sources as the user wrote them, for messages and reports."""
        return ", ".join(self.source_labels or self.sources)


class SessionEvents(Protocol):
    """What the session announces about hosts and topologies (the plugin relays it to the ``pytest_mh_*`` hooks).

    Each method is called after the step it names; an exception from it counts as a failure of that step.
    """

    def host_setup(self, host: MultihostHost, error: BaseException | None) -> None:
        """A host's session setup ran (``error``: why it failed, or None)."""

    def host_recovered(self, host: MultihostHost, restored: list[str], left: list[str], skipped: list[str]) -> None:
        """What a dead session left on ``host`` was undone from its journal, before the host's setup."""

    def topology_setup(self, mark: TopologyMark, hosts: list[MultihostHost], error: BaseException | None) -> None:
        """A topology was set up before its first test (``hosts``: those whose session setup succeeded)."""

    def topology_teardown(self, mark: TopologyMark, hosts: list[MultihostHost], error: BaseException | None) -> None:
        """A topology that was set up was torn down."""

    def session_teardown(self, hosts: list[MultihostHost], errors: list[Exception]) -> None:
        """The set-up hosts were torn down at the end of the session; their connections are still open."""


class NoEvents:
    """A :class:`SessionEvents` that listens to nothing (a session outside pytest, in unit tests)."""

    def host_setup(self, host: MultihostHost, error: BaseException | None) -> None:
        pass

    def host_recovered(self, host: MultihostHost, restored: list[str], left: list[str], skipped: list[str]) -> None:
        pass

    def topology_setup(self, mark: TopologyMark, hosts: list[MultihostHost], error: BaseException | None) -> None:
        pass

    def topology_teardown(self, mark: TopologyMark, hosts: list[MultihostHost], error: BaseException | None) -> None:
        pass

    def session_teardown(self, hosts: list[MultihostHost], errors: list[Exception]) -> None:
        pass


@dataclass
class ActiveTopology:
    """The topology whose group of tests is running, with its hosts and its setup outcome."""

    mark: TopologyMark
    assignment: Assignment
    hosts_by_slot: dict[tuple[str, str], list[MultihostHost]]
    controller_hosts: dict[str, Any]
    error: BaseException | None = None
    skip_reason: str | None = None
    set_up: bool = False


class MultihostSession:
    """Everything the plugin knows about the session's hosts; one per pytest process.

    It maps inventory hosts to roles and domains, fills topologies with hosts, sets hosts up
    once (``pytest_setup``) when a topology first needs them, runs topology setup and
    teardown around each group of tests, and tears everything down at the end.
    """

    def __init__(
        self,
        options: SessionOptions,
        inventory: Inventory,
        registry_hook: Callable[[Registry], None],
        events: SessionEvents | None = None,
    ) -> None:
        self.options = options
        self.inventory = inventory
        self.events: SessionEvents = events if events is not None else NoEvents()
        self.dead = DeadHosts()
        """Hosts that stopped answering: their commands fail at once for the rest of the session."""
        self._registry_hook = registry_hook
        self._registry: Registry | None = None
        self.host_infos: list[HostInfo] = [self._host_info(host) for host in inventory.hosts]
        self._infos = {info.name: info for info in self.host_infos}
        self._resolved: dict[str, Assignment | str] = {}
        self._hosts: dict[str, MultihostHost] = {}
        self._transports: dict[str, GuardedTransport] = {}  # the tests' transport of each host, as made
        self._host_state: dict[str, BaseException | None] = {}
        self.active: ActiveTopology | None = None
        self.locks = HostLocks()
        self.leases: HostLeases | None = None
        if options.lease_owner is not None:
            self.leases = HostLeases(
                options.lease_owner,
                self._lease_transport,
                command_transport=self._command_transport,
                ttl=options.lease_ttl,
                timeout=options.lease_timeout,
            )
        self.journal = RollbackJournal(record_calls=options.record_calls)
        self.journal.open("session")
        # Each change's undo is also written on its host before the change: a later session replays
        # what this one leaves if it dies (recovery.py). The owner token names the file there.
        owner = options.lease_owner.token if options.lease_owner is not None else None
        self.controller = options.lease_owner.controller if options.lease_owner is not None else _controller_id()
        self.persist = HostJournal(owner or f"{self.controller}/{os.getpid()}/{RUN_ID}")
        self.journal.on_close.append(lambda scope: self.persist.flush())
        self._recorder = JournalRecorder(self.journal, persist=self.persist)
        self.playbooks = PlaybookRunner(
            options.sources,
            options.vault_password_files,
            options.playbook_dirs,
            recorder=self._recorder,
            vault_ids=options.vault_ids,
        )
        self._executor: WarmExecutor | None = None

    # -- inventory → roles and domains ---------------------------------------------------------
    def _host_info(self, host: InventoryHost) -> HostInfo:
        roles: list[str] = []
        extra = host.variables.get("mh_role")
        if isinstance(extra, str):
            roles.append(extra)
        elif isinstance(extra, list | tuple):
            roles.extend(str(role) for role in extra)
        for group in host.groups:
            roles.append(self.options.role_groups.get(group, group))
            roles.append(group)
        domain = host.variables.get("mh_domain") or self.options.default_domain
        try:
            executor_for_host(host.variables, self.options.executor, host=host.name)
        except ValueError as err:
            raise MultihostError(str(err)) from None
        pool = host.variables.get("mh_pool")
        return HostInfo(host.name, tuple(dict.fromkeys(roles)), str(domain), str(pool) if pool else None)

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            registry = Registry()
            self._registry_hook(registry)
            self._registry = registry
        return self._registry

    def roles_map(self) -> dict[str, dict[str, list[str]]]:
        """``{domain: {role: [hosts]}}`` in inventory order (for reports)."""
        result: dict[str, dict[str, list[str]]] = {}
        for info in self.host_infos:
            for role in info.roles:
                result.setdefault(info.domain, {}).setdefault(role, []).append(info.name)
        return result

    @property
    def fleet(self) -> list[str]:
        """The pools of the inventory (hosts' ``mh_pool``), sorted; empty when no host names one."""
        return sorted({info.pool for info in self.host_infos if info.pool})

    def resolve(self, mark: TopologyMark, pool: str | None = None) -> Assignment | str:
        """The hosts for ``mark``'s topology (in ``pool``), or why the inventory cannot give them (cached)."""
        key = mark.name if pool is None else f"{mark.name}@{pool}"
        known = self._resolved.get(key)
        if known is None:
            infos = self.host_infos if pool is None else [info for info in self.host_infos if info.pool == pool]
            if not infos:
                sources = self.options.shown_sources
                where = f"inventory {sources}" if pool is None else f"pool {pool!r}"
                known = f"topology {mark.name!r} needs hosts ({mark.topology.describe()}); {where} has none"
            else:
                known = assign(mark.name, mark.topology, infos)
                if isinstance(known, str) and pool is not None:
                    known = f"pool {pool!r}: {known}"
            self._resolved[key] = known
        return known

    def uses_whole_inventory(self, assignment: Assignment) -> bool:
        return set(assignment.hosts) == set(self._infos)

    def host(self, name: str) -> MultihostHost:
        """The session's object for inventory host ``name`` (created on first use)."""
        host = self._hosts.get(name)
        if host is None:
            info = self._infos[name]
            host = self.registry.make_host(name, info.roles, info.domain, self.inventory.host(name).variables)
            host._mh_attach(
                HostServices(
                    connection=lambda: self._connection(host),
                    modules=HostModules(host, _LazyExecutor(self), recorder=self._recorder),
                    journal=self.journal,
                    playbooks=self.playbooks,
                )
            )
            self._hosts[name] = host
        return host

    def _connection(self, host: MultihostHost) -> Connection:
        """A host's connection, failing at once once the host is known to be dead (see :class:`DeadHosts`)."""
        from ..ansible.transport import AnsibleTransport

        # Commands share the warm agent's way in: hosts on the standard executor keep an ssh client per command.
        agent = executor_for_host(host.vars, self.options.executor, host=host.name) == "warm"
        transport = GuardedTransport(host.name, AnsibleTransport(host.name, host.vars, command_agent=agent), self.dead)
        self._transports[host.name] = transport
        observer = None
        if self.options.record_calls:

            def observer(
                command: str, stdin: str | None, result: ProcessResult, become: bool | None, become_user: str | None
            ) -> None:
                args = {"stdin": stdin, "rc": result.rc} if stdin is not None else {"rc": result.rc}
                self.journal.log_call(host.name, "command", command, args, become=become, become_user=become_user)

        return Connection(host.name, host.vars, transport=transport, observer=observer)

    def _command_transport(self, name: str) -> GuardedTransport:
        """The transport of host ``name``'s connection (made here if no test used it yet): leases are
        taken and given back over it, in the main thread, so that the host is connected once."""
        self.host(name).conn  # noqa: B018 - made on first use
        return self._transports[name]

    def _lease_transport(self, name: str) -> Any:
        """A transport of its own for the renewal of a host's lease (that thread must not share the tests' one).

        It fails at once for a host already marked dead, but its own failures mark nothing: a renewal
        that meets the host while a test restarts its sshd must not end the host for the session.
        """
        from ..ansible.transport import AnsibleTransport

        inner = AnsibleTransport(name, self.inventory.host(name).variables)
        return GuardedTransport(name, inner, self.dead, marks=False)

    def is_set_up(self, name: str) -> bool:
        """Whether host ``name``'s session setup ran and succeeded."""
        return name in self._host_state and self._host_state[name] is None

    def _set_up_hosts(self, names: Iterable[str]) -> list[MultihostHost]:
        return [self._hosts[name] for name in names if self.is_set_up(name)]

    # -- life cycle ----------------------------------------------------------------------------
    def enter(self, mark: TopologyMark, assignment: Assignment | None = None) -> ActiveTopology:
        """Make ``mark``'s topology the active one: leave the previous one, set hosts and topology up.

        A failure is recorded on the returned object (and re-raised by :meth:`check`) so that
        every test of the topology reports it without trying again.

        :param assignment: The hosts to use (the pool scheduler's choice under xdist); by default
            the inventory's first hosts that fill the topology.
        """
        active = self.active
        same = active is not None and active.mark.name == mark.name
        if active is not None and same and (assignment is None or assignment == active.assignment):
            return active
        if active is not None:
            self.leave()
        resolved = assignment if assignment is not None else self.resolve(mark)
        if isinstance(resolved, str):
            raise MultihostError(resolved)
        assignment = resolved
        hosts_by_slot = {key: [self.host(name) for name in names] for key, names in assignment.slots.items()}
        controller_hosts: dict[str, Any] = {}
        for fixture, path in mark.paths.items():
            hosts = hosts_by_slot[(path.domain, path.role)]
            controller_hosts[fixture] = list(hosts) if path.index is None else hosts[path.index]
        active = self.active = ActiveTopology(mark, assignment, hosts_by_slot, controller_hosts)
        self.locks.acquire(self._lock_key(name) for name in assignment.hosts)
        # The hosts not connected yet come up side by side (a read-only `true` each); the leases are
        # then taken over the same connections, so each host costs one ssh handshake.
        unprobed = [self._hosts[name] for name in assignment.hosts if name not in self._host_state]
        probed = probe_all(unprobed)
        try:
            try:
                if self.leases is not None:
                    self.leases.acquire(name for name in assignment.hosts if probed.get(name) is None)
            except HostUnreachableError as err:
                # Taking the lease is a contact of its own with the host, between tests: it did not answer.
                self.dead.mark(err.host, err.reason)
                raise
            # Hosts are set up in the session scope (undone at the end of the session, not of this topology).
            with self.journal.into("session"):
                for name in assignment.hosts:
                    self._setup_host(name, probed)
            self.journal.open("topology")
            mark.controller._mh_bind(mark, controller_hosts, slots=hosts_by_slot)
            mark.controller._invoke_with_args(mark.controller.topology_setup)
            active.set_up = True
        except HostUnreachableError as err:
            active.error = err
            if self.options.unreachable == "skip":
                active.skip_reason = str(err)
        except Exception as err:
            log.error("topology %r: setup failed: %s", mark.name, err)
            active.error = err
        try:
            self.events.topology_setup(mark, self._set_up_hosts(assignment.hosts), active.error)
        except Exception as err:
            if active.error is None:
                active.error = err
        return active

    def check(self, active: ActiveTopology) -> None:
        """Raise the recorded setup failure of ``active`` (each test of the topology calls this)."""
        err = active.error
        if err is None:
            return
        if isinstance(err, HostUnreachableError):
            raise HostUnreachableError(err.host, err.reason) from err
        raise MultihostError(f"topology {active.mark.name!r} could not be set up: {type(err).__name__}: {err}") from err

    def _recover(self, host: MultihostHost) -> None:
        """Undo what a session that is gone left on ``host`` (its journal there), before the host's first use.

        :raises MultihostError: Some of it could not be undone: the list, and how to finish by hand.
        """
        taken_over: set[str] = set(self.leases.taken_over.get(host.name, ())) if self.leases is not None else set()

        def may_replay(owner: str) -> bool:
            return session_gone(owner, self.controller, taken_over=taken_over)

        with self.journal.replay():
            report = recover_host(host, may_replay, me=self.persist.owner)
        if report.restored_anything or report.skipped:
            self.events.host_recovered(host, report.lines, report.failures, report.skipped)
        if report.failures:
            raise MultihostError(
                f"host {host.name!r}: a session that is gone left changes that could not be undone: "
                + "; ".join(report.failures)
                + f" (the journal stays in {JOURNAL_DIR} on the host; undo them by hand, or run "
                "`pytest-mh-ansible recover -i INVENTORY` once the cause is fixed)"
            )

    def _setup_host(self, name: str, probed: Mapping[str, BaseException | None] | None = None) -> None:
        if name in self._host_state:
            err = self._host_state[name]
            if err is not None:
                raise err
            return
        host = self._hosts[name]
        try:
            if probed is not None and name in probed:
                error = probed[name]
                if error is not None:
                    raise error
            else:
                host.conn.connect()
                # Connection plugins connect lazily; one command proves the host is reachable.
                host.conn.run("true", raise_on_error=False)
            self._recover(host)
            host.pytest_setup()
        except HostUnreachableError as err:
            self._host_state[name] = err
            self.events.host_setup(host, err)
            raise
        except Exception as err:
            wrapped = MultihostError(f"host {name!r}: pytest_setup failed: {type(err).__name__}: {err}")
            wrapped.__cause__ = err
            self._host_state[name] = wrapped
            self.events.host_setup(host, wrapped)
            raise wrapped from err
        self._host_state[name] = None
        self.events.host_setup(host, None)

    def leave(self) -> None:
        """Tear the active topology down (if it was set up) and release its hosts."""
        active, self.active = self.active, None
        if active is None:
            return
        try:
            steps: list[tuple[object, Callable[[], object]]] = []
            if active.set_up:
                controller = active.mark.controller
                steps.append((controller, lambda: controller._invoke_with_args(controller.topology_teardown)))
            steps.append((self.journal, lambda: self.journal.close("topology")))
            error: TeardownExceptionGroup | None = None
            try:
                run_all(f"topology {active.mark.name!r}", steps)
            except TeardownExceptionGroup as group:
                error = group
            if active.set_up:
                self.events.topology_teardown(active.mark, self._set_up_hosts(active.assignment.hosts), error)
            if error is not None:
                raise error
        finally:
            self.locks.release(self._lock_key(name) for name in active.assignment.hosts)
            if self.leases is not None:
                self.leases.release(active.assignment.hosts)

    def new_fixture(self, active: ActiveTopology, request: pytest.FixtureRequest | None = None) -> MultihostFixture:
        registry = self.registry
        return registry.fixture_class(active, registry.make_role, self.playbooks, request)

    def _finish_journals(self, *, failed: bool) -> None:
        """The session's journals on its hosts: removed when everything was undone, else kept for a recovery."""
        self.persist.flush()
        for host in self.persist.hosts:
            if failed:
                log.warning(
                    "%s: the rollback journal %s stays on the host (some undo steps failed)",
                    host.name,
                    self.persist.path,
                )
                continue
            try:
                self.persist.finish(host)
            except Exception as err:  # a host gone: its journal says all is done, a later session removes it
                log.warning("%s: could not remove the rollback journal %s: %s", host.name, self.persist.path, err)

    def shutdown(self) -> list[Exception]:
        """End of session: leave the topology, ``pytest_teardown`` every set-up host, close connections."""
        errors: list[Exception] = []
        try:
            self.leave()
        except Exception as err:
            errors.append(err)
        hosts = self._set_up_hosts(list(self._host_state))
        try:
            self.locks.acquire(self._lock_key(host.name) for host in hosts)
            if self.leases is not None:
                try:
                    self.leases.acquire(host.name for host in hosts)
                except Exception as err:
                    errors.append(err)
            errors.extend(run_all("session teardown", [(host, host.pytest_teardown) for host in hosts], reraise=False))
            closed = self.journal.close_all()
            errors.extend(closed)
            self._finish_journals(failed=bool(closed))
            try:
                self.events.session_teardown(hosts, list(errors))
            except Exception as err:
                errors.append(err)
        finally:
            if self._executor is not None:
                self._executor.close()
                self._executor = None
            self.locks.release()
            if self.leases is not None:
                self.leases.close()
            errors.extend(
                run_all("closing connections", [(h, h._mh_close) for h in self._hosts.values()], reraise=False)
            )
            self._host_state.clear()
        return errors

    def _lock_key(self, name: str) -> str:
        """One lock per real host: the same inventory name in two labs (or inventories) is two hosts."""
        variables = self.inventory.host(name).variables
        address = variables.get("ansible_host") or name
        port = variables.get("ansible_port") or ""
        return f"{name}@{address}:{port}"

    @property
    def has_executor(self) -> bool:
        """Whether the module executor was made (a module ran in this session)."""
        return self._executor is not None

    @property
    def executor(self) -> WarmExecutor:
        """The session's module executor, made on first use (a session without module calls pays nothing).

        One executor serves both ways of running modules: each host takes its ``mh_executor``
        variable, else the session's ``--mh-executor`` (see docs/executors.md).
        """
        if self._executor is None:
            from ..ansible.warm import WarmExecutor

            self._executor = WarmExecutor(self.inventory, default=self.options.executor)
        return self._executor


class _LazyExecutor:
    """Hands module calls to the session's executor, creating it on the first call."""

    def __init__(self, session: MultihostSession) -> None:
        self._session = session

    def run(
        self, host: str, module: str, args: Mapping[str, Any], **options: Unpack[ModuleCallOptions]
    ) -> dict[str, Any]:
        """Run a module; a host found unreachable is marked dead at once, and calls to a dead host fail at once."""
        dead = self._session.dead
        if host in dead:
            raise dead.error(host)
        try:
            return self._session.executor.run(host, module, args, **options)
        except HostUnreachableError as err:
            dead.mark(err.host, err.reason)
            raise

    def packages_changed(self, host: str) -> None:
        """Passed on to the executor if there is one (without one, no interpreter was started anywhere)."""
        if self._session.has_executor:
            self._session.executor.packages_changed(host)

    def close(self) -> None:
        """The session closes its executor."""
