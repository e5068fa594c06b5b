"""SIGINT, SIGTERM and SIGHUP: the first stops the test (or waits for a running teardown), the second exits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from pytest_mh_ansible._private.session.signals import Interrupts, SignalRelay

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")


@pytest.fixture
def said() -> list[str]:
    return []


@pytest.fixture
def interrupts(said: list[str]) -> Iterator[Interrupts]:
    handler = Interrupts(said.append, pending=lambda: ["[server1] ansible.builtin.copy dest=/etc/app.conf"])
    handler.install()
    try:
        yield handler
    finally:
        handler.uninstall()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_interrupts__first_signal_in_a_test__stops_it_and_names_signal_and_test(
    interrupts: Interrupts, said: list[str], signum: signal.Signals
) -> None:
    interrupts.test = "tests/test_x.py::test_a[pair]"
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signum)
    assert interrupts.received == signum.name
    assert said == [
        f"pytest-mh-ansible: {signum.name} received during tests/test_x.py::test_a[pair]: stopping the test; "
        "its teardown, the rollback and the host teardown still run "
        + (
            "(press Ctrl-C again to exit at once)"
            if signum == signal.SIGINT
            else f"(send {signum.name} again to exit at once)"
        )
    ]


def test_interrupts__first_signal_during_teardown__does_not_interrupt_it_but_stops_the_run(
    interrupts: Interrupts, said: list[str]
) -> None:
    interrupts.tearing_down = True
    interrupts.session = SimpleNamespace(shouldstop=False)
    os.kill(os.getpid(), signal.SIGTERM)  # no KeyboardInterrupt: the rollback in progress goes on
    assert interrupts.session.shouldstop == "pytest-mh-ansible: SIGTERM received"
    assert "the teardown and the rollback that run now finish, then the run stops" in said[0]


def test_interrupts__same_signal_twice_at_once__counts_once(interrupts: Interrupts, said: list[str]) -> None:
    """A closed terminal's SIGHUP reaches an xdist worker from its group and from the controller."""
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGHUP)
    os.kill(os.getpid(), signal.SIGHUP)
    assert interrupts.count == 1
    assert len(said) == 1


def test_interrupts__uninstall__restores_the_previous_handlers() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    handler = Interrupts(print)
    handler.install()
    assert signal.getsignal(signal.SIGTERM) == handler._handle
    handler.uninstall()
    assert {sig: signal.getsignal(sig) for sig in before} == before


SECOND = textwrap.dedent("""
    import os, signal, time
    from pytest_mh_ansible._private.session.signals import Interrupts

    handler = Interrupts(print, pending=lambda: ["[server1] ansible.builtin.user name=alice", "[server1] x"])
    handler.install()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
    except KeyboardInterrupt:
        print("stopping", flush=True)
    time.sleep(1.2)  # past the window in which a repeat counts as the same signal
    os.kill(os.getpid(), signal.SIGTERM)
    print("still running")
""")


def test_interrupts__second_signal__exits_at_once_and_lists_what_is_not_reverted() -> None:
    done = subprocess.run([sys.executable, "-c", SECOND], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2
    lines = done.stdout.splitlines()
    assert "still running" not in lines
    assert lines[-3:] == [
        "pytest-mh-ansible: SIGTERM received again: exiting now; 2 change(s) NOT reverted:",
        "  not reverted: [server1] ansible.builtin.user name=alice",
        "  not reverted: [server1] x",
    ]


def test_interrupts__xdist_worker__takes_a_repeated_sigint_for_the_same_ending(said: list[str]) -> None:
    """Ctrl-C reaches a worker from the terminal's process group and from the controller's relay."""
    handler = Interrupts(said.append, relayed=True)
    handler.install()
    try:
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)  # no exit: the same Ctrl-C, relayed
    finally:
        handler.uninstall()
    assert handler.count == 1
    assert len(said) == 1


QUICK_SECOND_CTRL_C = textwrap.dedent("""
    import os, signal
    from pytest_mh_ansible._private.session.signals import Interrupts

    handler = Interrupts(print)
    handler.install()
    try:
        os.kill(os.getpid(), signal.SIGINT)
    except KeyboardInterrupt:
        print("stopping", flush=True)
    os.kill(os.getpid(), signal.SIGINT)
    print("still running")
""")


def test_interrupts__without_xdist__a_quick_second_ctrl_c_exits_at_once() -> None:
    done = subprocess.run(
        [sys.executable, "-c", QUICK_SECOND_CTRL_C], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 2, done
    assert "still running" not in done.stdout
    assert "SIGINT received again: exiting now" in done.stdout


WORKER = textwrap.dedent("""
    import signal, sys, time
    got = []
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        signal.signal(getattr(signal, name), lambda signum, frame: got.append(signal.Signals(signum).name))
    print("ready", flush=True)
    deadline = time.monotonic() + 20
    while not got and time.monotonic() < deadline:
        time.sleep(0.01)
    print(",".join(got), flush=True)
""")


@pytest.fixture
def worker() -> Iterator[subprocess.Popen[str]]:
    """A process standing in for an xdist worker: prints the first signals it gets."""
    proc = subprocess.Popen([sys.executable, "-c", WORKER], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_relay__with_workers__passes_the_signal_on_and_keeps_the_controller_running(
    said: list[str], worker: subprocess.Popen[str], signum: signal.Signals
) -> None:
    """The controller must outlive its workers' rollback: on Ctrl-C xdist would end their gateways at once."""
    relay = SignalRelay(said.append)
    relay.workers["gw0"] = worker.pid
    relay.install()
    try:
        os.kill(os.getpid(), signum)  # no KeyboardInterrupt here
    finally:
        relay.uninstall()
    out, _ = worker.communicate(timeout=30)
    assert out.strip() == signum.name
    again = "press Ctrl-C again" if signum == signal.SIGINT else f"send {signum.name} again"
    assert said == [
        f"pytest-mh-ansible: {signum.name} received: passed on to the workers (gw0); each stops its test, "
        f"runs its teardown and rollback ({again} to exit at once)"
    ]


def test_signal_relay__sigint_before_any_worker__interrupts_the_controller(said: list[str]) -> None:
    relay = SignalRelay(said.append)
    relay.install()
    try:
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    finally:
        relay.uninstall()
    assert said == []
