"""The hooks that pytest-mh-ansible adds to pytest (``pytest_addhooks``).

Besides ``pytest_mh_register``, the session announces what it does to hosts and topologies
through ``pytest_mh_*`` event hooks. The plugin's own reporting (artifacts) listens to them, and
so can a project's ``conftest.py`` or plugin: implement a hook to fetch extra files, record timings,
or check a host after its session setup. Event hooks run for their side effects; an exception in
one is reported as an error of the step that announced it, so keep them robust.

Example::

    # conftest.py
    def pytest_mh_topology_setup(mark, hosts, error):
        if error is None:
            print(f"topology {mark.name}: {', '.join(h.name for h in hosts)} ready")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .host import MultihostHost
    from .marks import TopologyMark
    from .registry import Registry

hookspec = pytest.hookspec


@hookspec
def pytest_mh_register(registry: Registry) -> None:
    """Register the project's role, host and topology mark classes.

    Called once per session, after collection, in every ``conftest.py`` and plugin that
    implements it.

    Example::

        def pytest_mh_register(registry):
            registry.role("client", Client)
    """


@hookspec
def pytest_mh_host_setup(host: MultihostHost, error: BaseException | None) -> None:
    """A host's session setup ran: connected, then ``host.pytest_setup()``; once per host and session.

    Called before the first topology that needs the host is set up.

    :param host: The host.
    :param error: Why the setup failed (``HostUnreachableError`` when the host could not be
        reached), or None.
    """


@hookspec
def pytest_mh_host_recovered(host: MultihostHost, restored: list[str], left: list[str], skipped: list[str]) -> None:
    """A host held the journal of a session that is gone (killed, crashed): what it left was undone.

    Called before the host's session setup, when its journal (``/var/lib/mh-ansible/journal``) was
    replayed; the plugin prints each line in the terminal.

    :param restored: ``[host] restored: <change> (left by session <owner>)`` for each change undone,
        and ``[host] not restored: ...`` for changes the dead session could not have undone either.
    :param left: What could not be undone (then the host's setup fails with the same list).
    :param skipped: Owners of journals left alone: sessions of another controller that may still run.
    """


@hookspec
def pytest_mh_topology_setup(mark: TopologyMark, hosts: list[MultihostHost], error: BaseException | None) -> None:
    """A topology's setup ran (``topology_setup`` of its controller), before the first of its tests.

    :param mark: The topology mark whose group of tests is about to run.
    :param hosts: The topology's hosts whose session setup succeeded.
    :param error: Why the topology (or one of its hosts) could not be set up, or None.
    """


@hookspec
def pytest_mh_topology_teardown(mark: TopologyMark, hosts: list[MultihostHost], error: BaseException | None) -> None:
    """A topology that was set up was torn down (``topology_teardown``, then its rollback scope).

    :param mark: The topology mark whose group of tests ended.
    :param hosts: The topology's hosts whose session setup succeeded.
    :param error: The teardown's failure (a ``TeardownExceptionGroup``), or None.
    """


@hookspec
def pytest_mh_session_teardown(hosts: list[MultihostHost], errors: list[Exception]) -> None:
    """The end of the session: every set-up host's ``pytest_teardown`` and the rollback ran.

    The hosts' connections are still open; they close after this hook.

    :param hosts: The hosts whose session setup succeeded.
    :param errors: What failed during the session teardown (empty when nothing did).
    """


@hookspec
def pytest_mh_test_setup(item: pytest.Item, hosts: list[MultihostHost]) -> None:
    """A test on hosts is about to be set up: before host, controller, utility and role setup, and
    before the journal opens the test's rollback scope. The drift check fingerprints the hosts here.

    :param item: The test.
    :param hosts: The test's hosts (each once).
    """


@hookspec
def pytest_mh_test_teardown(item: pytest.Item, hosts: list[MultihostHost]) -> None:
    """A test's teardown and rollback ran (not called when its setup failed). An exception raised
    here fails the test's teardown: the drift check raises when a host differs from before the test.

    :param item: The test.
    :param hosts: The test's hosts (each once).
    """
