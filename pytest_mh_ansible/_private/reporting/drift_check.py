"""The drift check (``--mh-verify-rollback``) as a listener of the per-test events.

Before a test is set up on its hosts it fingerprints them; after the test's rollback it
fingerprints them again, and any difference fails the test's teardown. The fingerprints
themselves come from :mod:`..rollback.drift`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, final

import pytest

from ...errors import MultihostError
from ..rollback.drift import DEFAULT_EXCLUDE, differences, fingerprint, verify_paths

if TYPE_CHECKING:
    from ...host import MultihostHost

__all__ = ["DriftCheck", "register"]

PLUGIN_NAME = "mh-ansible-drift-check"
_BEFORE_KEY = pytest.StashKey[dict[str, tuple[list[str], dict[str, Any]]]]()


def register(config: pytest.Config) -> None:
    """Register the check when ``--mh-verify-rollback`` is given (called from ``plugin.pytest_configure``)."""
    if config.getoption("mh_verify_rollback") and not config.pluginmanager.has_plugin(PLUGIN_NAME):
        config.pluginmanager.register(DriftCheck(config), PLUGIN_NAME)


@final
class DriftCheck:
    """Fingerprints each test's hosts before the test and after its rollback; a difference is drift."""

    def __init__(self, config: pytest.Config) -> None:
        self._paths = [str(path) for path in config.getini("mh_verify_paths")]
        self._exclude = [*DEFAULT_EXCLUDE, *config.getini("mh_verify_exclude")]
        self._caches: dict[str, dict[str, Any]] = {}  # per host, from one fingerprint to the next

    def pytest_mh_test_setup(self, item: pytest.Item, hosts: list[MultihostHost]) -> None:
        before: dict[str, tuple[list[str], dict[str, Any]]] = {}
        for host in hosts:
            paths = verify_paths(host, self._paths)
            before[host.name] = (paths, fingerprint(host, paths, self._exclude, self._caches.setdefault(host.name, {})))
        item.stash[_BEFORE_KEY] = before

    def pytest_mh_test_teardown(self, item: pytest.Item, hosts: list[MultihostHost]) -> None:
        """Fail the teardown when a host differs from its state before the test (drift)."""
        before = item.stash.get(_BEFORE_KEY, None)
        if before is None:
            return
        drift: list[str] = []
        for host in hosts:
            paths, old = before[host.name]
            for line in differences(
                old, fingerprint(host, paths, self._exclude, self._caches.setdefault(host.name, {}))
            ):
                drift.append(f"{host.name}: {line}")
        if drift:
            raise MultihostError(
                "the hosts differ from their state before the test (drift not rolled back):\n  " + "\n  ".join(drift)
            )
