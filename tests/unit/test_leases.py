"""Leases on hosts: the shell scripts run for real (locally, in a temporary lease root)."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_mh_ansible import HostLeaseError
from pytest_mh_ansible._private.session.leases import HostLeases, LeaseOwner, lease_path


@pytest.fixture(autouse=True)
def _no_renewal_thread_left() -> Iterator[None]:
    """Every test closes its leases: a renewal thread left running renews, later, a lease whose
    directory is gone, and logs "lease lost" into another test's output (seen in CI, xdist)."""

    def renewals() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "mh-lease-renewal" and t.is_alive()}

    before = renewals()
    yield
    assert renewals() <= before, "a HostLeases of this test was not closed: its renewal thread still runs"


class LocalTransport:
    """Runs lease commands in a local shell, as the local connection plugin would."""

    def __init__(self) -> None:
        self.commands = 0
        self.closed = False

    def connect(self) -> None:
        pass

    def exec(self, command: str, **_: object) -> tuple[int, bytes, bytes]:
        self.commands += 1
        done = subprocess.run(["/bin/sh", "-c", command], capture_output=True, check=False)
        return done.returncode, done.stdout, done.stderr

    def close(self) -> None:
        self.closed = True


def _leases(
    root: Path, controller: str, *, timeout: float = 0, ttl: float = 60, traces: tuple[str, ...] = ()
) -> HostLeases:
    owner = LeaseOwner(controller, os.getpid(), "run1")
    return HostLeases(
        owner, lambda host: LocalTransport(), ttl=ttl, timeout=timeout, poll=0.1, root=str(root), traces=traces
    )


def test_leases__second_controller_gets_an_error_naming_the_holder(tmp_path: Path) -> None:
    first, second = _leases(tmp_path, "ctl-a"), _leases(tmp_path, "ctl-b", timeout=0.3)
    first.acquire(["server1"])
    with pytest.raises(HostLeaseError) as info:
        second.acquire(["server1"])
    assert info.value.host == "server1"
    assert info.value.holder == f"ctl-a/{os.getpid()}/run1"
    assert "leased by 'ctl-a/" in str(info.value)
    assert "--mh-lease-timeout" in str(info.value)
    first.close()
    second.acquire(["server1"])
    assert second.held == {"server1"}
    second.close()
    assert not Path(lease_path("server1", str(tmp_path))).exists()


def test_leases__several_hosts_at_once(tmp_path: Path) -> None:
    leases = _leases(tmp_path, "ctl-a")
    leases.acquire(["h3", "h1", "h2"])
    assert leases.held == {"h1", "h2", "h3"}
    leases.close()
    assert not tmp_path.exists()  # the lease root went with the last lease in it


def test_leases__the_same_owner_takes_its_lease_again(tmp_path: Path) -> None:
    leases = _leases(tmp_path, "ctl-a")
    leases.acquire(["h1"])
    leases.release()
    leases.acquire(["h1"])
    other = _leases(tmp_path, "ctl-a")  # same token: a second session object of the same process and run
    other.acquire(["h1"])
    leases.close()
    other.close()


def test_leases__a_stale_lease_is_taken_over(tmp_path: Path) -> None:
    lease = Path(lease_path("h1", str(tmp_path)))
    lease.mkdir(parents=True)
    (lease / "owner").write_text(f"ctl-dead/1/run0 {int(time.time()) - 5}\n")
    leases = _leases(tmp_path, "ctl-b")
    leases.acquire(["h1"])
    assert (lease / "owner").read_text().startswith(f"ctl-b/{os.getpid()}/run1 ")
    leases.close()


def test_leases__release_is_quiet(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Giving a lease back is not reported as a failure (it once was, at the end of every session)."""
    leases = _leases(tmp_path, "ctl-a")
    leases.acquire(["h1", "h2"])
    leases.release(["h1"])
    leases.close()
    assert not tmp_path.exists()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_leases__release_leaves_another_owners_lease_alone(tmp_path: Path) -> None:
    mine, theirs = _leases(tmp_path, "ctl-a"), _leases(tmp_path, "ctl-b")
    theirs.acquire(["h1"])
    mine._held.add("h1")  # as if we believed we held it (it was taken over meanwhile)
    mine.release()
    assert (Path(lease_path("h1", str(tmp_path))) / "owner").read_text().startswith("ctl-b/")
    assert theirs.renew() == []
    assert mine.renew() == []  # holds nothing now
    theirs.close()


def test_leases__renewal_pushes_the_expiry_and_reports_a_lost_lease(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    leases = _leases(tmp_path, "ctl-a", ttl=5)
    leases.acquire(["h1"])
    owner = Path(lease_path("h1", str(tmp_path))) / "owner"
    owner.write_text(f"ctl-a/{os.getpid()}/run1 0\n")
    assert leases.renew() == []
    assert int(owner.read_text().split()[1]) >= int(time.time()) + 4
    owner.write_text("ctl-x/9/run9 99999999999\n")
    assert leases.renew() == ["h1"]
    assert "host h1: lease lost to ctl-x/9/run9" in caplog.messages
    leases.close()


def test_leases__a_bad_controller_id_is_refused() -> None:
    with pytest.raises(ValueError, match="'ci job'"):
        LeaseOwner("ci job", 1, "run1")


def test_leases__taken_and_given_back_over_the_tests_transport_renewed_over_their_own(tmp_path: Path) -> None:
    """One ssh handshake per host at session start: the caller's lease commands share the tests' connection."""
    tests_transport, own = LocalTransport(), LocalTransport()
    made: list[str] = []

    def own_for(host: str) -> LocalTransport:
        made.append(host)
        return own

    owner = LeaseOwner("ctl-a", os.getpid(), "run1")
    leases = HostLeases(
        owner,
        own_for,
        command_transport=lambda host: tests_transport,
        ttl=60,
        timeout=0,
        root=str(tmp_path),
        traces=(),
    )
    leases.acquire(["h1", "h2"])
    assert leases.held == {"h1", "h2"}
    assert (tests_transport.commands, made) == (2, [])  # no connection of its own, no `true` probe
    assert leases.renew() == []
    assert (own.commands, made) == (2, ["h1", "h2"])  # the renewal thread's own transports
    leases.release(["h1"])
    assert tests_transport.commands == 3
    leases.close()
    assert tests_transport.commands == 4  # h2 given back over the tests' transport too
    assert own.closed
    assert not tests_transport.closed  # the tests' transport is not the leases' to close
    assert not Path(lease_path("h2", str(tmp_path))).exists()


def test_leases__the_lease_root_goes_with_the_last_lease_never_under_another(tmp_path: Path) -> None:
    """Hosts are left as found: the lease root is removed (rmdir) by whoever gives back the last lease in it."""
    root = tmp_path / "leases"
    first, second = _leases(root, "ctl-a"), _leases(root, "ctl-b")
    first.acquire(["h1"])
    second.acquire(["h2"])
    first.close()
    assert (Path(lease_path("h2", str(root))) / "owner").read_text().startswith("ctl-b/")
    assert second.renew() == []
    second.close()
    assert not root.exists()


def test_leases__a_lease_is_taken_while_another_session_removes_the_root(tmp_path: Path) -> None:
    """The root vanishing between a taker's ``mkdir -p`` and its lease's ``mkdir`` only makes it try again."""
    root = tmp_path / "leases"
    stop = threading.Event()

    def churn() -> None:  # another session's release, over and over: rmdir of the (empty) root
        while not stop.wait(0.02):
            with contextlib.suppress(OSError):
                root.rmdir()

    thread = threading.Thread(target=churn)
    thread.start()
    try:
        for n in range(20):
            leases = _leases(root, "ctl-a", timeout=0)
            leases.acquire([f"h{n}"])
            assert (Path(lease_path(f"h{n}", str(root))) / "owner").exists()
            leases.close()
    finally:
        stop.set()
        thread.join()


def test_leases__traces_absent_at_take_are_removed_on_release_when_empty(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    made, kept, full = tmp_path / "var" / "snapshots", tmp_path / "kept", tmp_path / "full"
    kept.mkdir()
    traces = (str(made), str(made.parent), str(kept), str(full), "~/.cache-mh")
    env = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    try:
        leases = _leases(tmp_path / "leases", "ctl-a", traces=traces)
        leases.acquire(["h1"])
        made.mkdir(parents=True)  # the session made these for its own use
        full.mkdir()
        (full / "left").write_text("a dead session's journal\n")  # not empty: never removed
        (home / ".cache-mh").mkdir()
        leases.close()
    finally:
        if env is None:
            del os.environ["HOME"]
        else:
            os.environ["HOME"] = env
    assert not made.exists()
    assert not made.parent.exists()
    assert not (home / ".cache-mh").exists()  # "~/" is the login user's home on the host
    assert kept.is_dir()  # there before the lease: not ours
    assert (full / "left").exists()
    assert not (tmp_path / "leases").exists()


def test_leases__a_takeover_keeps_the_dead_sessions_record_of_its_traces(tmp_path: Path) -> None:
    root, trace = tmp_path / "leases", tmp_path / "trace"
    lease = Path(lease_path("h1", str(root)))
    lease.mkdir(parents=True)
    (lease / "owner").write_text(f"ctl-dead/1/run0 {int(time.time()) - 5}\n")
    (lease / "absent").write_text(f"{trace}\n")
    trace.mkdir()  # made by the dead session, after its take
    leases = _leases(root, "ctl-b", traces=(str(trace),))
    leases.acquire(["h1"])
    assert (lease / "absent").read_text() == f"{trace}\n"
    leases.close()
    assert not trace.exists()


def test_leases__a_trace_not_empty_at_a_release_is_noted_again_by_the_next_take(tmp_path: Path) -> None:
    """A session gives a host's lease back between topologies while its own files still fill a trace (its
    journal on the host): the trace is removed at a later release, once empty, though it existed at that take."""
    trace = tmp_path / "mh-ansible"
    leases = _leases(tmp_path / "leases", "ctl-a", traces=(str(trace),))
    leases.acquire(["h1"])
    trace.mkdir()
    (trace / "journal.jsonl").write_text("{}\n")
    leases.release()  # the first topology ends: the journal is still there
    assert trace.is_dir()
    leases.acquire(["h1"])  # the session's teardown takes the host again (the trace exists now)
    (trace / "journal.jsonl").unlink()  # everything undone: the journal goes
    leases.close()
    assert not trace.exists()


def test_leases__a_trace_that_stays_full_is_left(tmp_path: Path) -> None:
    trace = tmp_path / "mh-ansible"
    leases = _leases(tmp_path / "leases", "ctl-a", traces=(str(trace),))
    leases.acquire(["h1"])
    trace.mkdir()
    (trace / "journal.jsonl").write_text("{}\n")  # a journal kept for a recovery
    leases.close()
    assert (trace / "journal.jsonl").exists()


class _TogetherTransport(LocalTransport):
    """A lease command waits for its peers on the other hosts: it passes only when they run side by side."""

    def __init__(self, barrier: threading.Barrier) -> None:
        super().__init__()
        self.barrier = barrier

    def exec(self, command: str, **kwargs: object) -> tuple[int, bytes, bytes]:
        self.barrier.wait(timeout=10)
        return super().exec(command, **kwargs)


def test_leases__free_hosts_are_taken_and_given_back_side_by_side(tmp_path: Path) -> None:
    """One round trip for a topology's leases, not one per host (a BrokenBarrierError means one by one)."""
    barrier = threading.Barrier(3)
    transports = {host: _TogetherTransport(barrier) for host in ("h1", "h2", "h3")}
    leases = HostLeases(
        LeaseOwner("ctl-a", os.getpid(), "run1"),
        lambda host: LocalTransport(),
        command_transport=transports.__getitem__,
        ttl=60,
        timeout=0,
        root=str(tmp_path),
        traces=(),
    )
    leases.acquire(["h3", "h1", "h2"])
    assert leases.held == {"h1", "h2", "h3"}
    assert [t.commands for t in transports.values()] == [1, 1, 1]
    leases.release(["h1", "h2", "h3"])
    assert [t.commands for t in transports.values()] == [2, 2, 2]
    assert not tmp_path.exists()
    leases.close()


def test_leases__a_held_host_keeps_the_order_later_hosts_are_given_back_while_waiting(tmp_path: Path) -> None:
    """Taken side by side, yet as if in order: waiting for h2, the session holds h1 but not h3 (no deadlock)."""
    other = _leases(tmp_path, "ctl-b")
    other.acquire(["h2"])
    mine = _leases(tmp_path, "ctl-a", timeout=0.3)
    with pytest.raises(HostLeaseError) as info:
        mine.acquire(["h1", "h2", "h3"])
    assert info.value.host == "h2"
    assert mine.held == {"h1"}
    assert not Path(lease_path("h3", str(tmp_path))).exists()
    third = _leases(tmp_path, "ctl-c")
    third.acquire(["h3"])  # free while the waiting session did not hold it
    assert third.held == {"h3"}
    other.close()
    third.close()
    mine.acquire(["h2", "h3"])
    assert mine.held == {"h1", "h2", "h3"}
    mine.close()
    assert not tmp_path.exists()


def test_leases__a_failed_take_side_by_side_is_tried_again_in_order_and_raised(tmp_path: Path) -> None:
    class Broken(LocalTransport):
        def exec(self, command: str, **kwargs: object) -> tuple[int, bytes, bytes]:
            self.commands += 1
            return 255, b"", b"ssh: connect to host h2: Connection refused"

    transports: dict[str, LocalTransport] = {"h1": LocalTransport(), "h2": Broken(), "h3": LocalTransport()}
    leases = HostLeases(
        LeaseOwner("ctl-a", os.getpid(), "run1"),
        lambda host: LocalTransport(),
        command_transport=transports.__getitem__,
        ttl=60,
        timeout=0,
        root=str(tmp_path),
        traces=(),
    )
    with pytest.raises(HostLeaseError, match="rc=255"):
        leases.acquire(["h1", "h2", "h3"])
    assert leases.held == {"h1"}
    assert transports["h2"].commands == 2  # side by side, then in order (where the error is raised)
    assert not Path(lease_path("h3", str(tmp_path))).exists()
    leases.close()
