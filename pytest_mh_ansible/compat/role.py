"""pytest-mh's roles: ``MultihostRole`` with ``logger`` and ``artifacts``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

from .. import MultihostHost
from .. import MultihostRole as _MultihostRole
from .logger import MultihostLogger, logger_for

if TYPE_CHECKING:
    from .. import MultihostFixture

__all__ = ["MultihostRole"]

HostT = TypeVar("HostT", bound=MultihostHost)


class MultihostRole(_MultihostRole[HostT], Generic[HostT]):
    """pytest-mh's role: one host in one role for one test; its utilities are set up around the test.

    Example::

        class Client(MultihostRole[ClientHost]):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.fs = LinuxFileSystem(self.host)
    """

    def __init__(self, mh: MultihostFixture, role: str, host: HostT) -> None:
        super().__init__(mh, role, host)
        self.logger: MultihostLogger = logger_for("role", getattr(host, "hostname", host.name))
        self.artifacts: set[str] = set()

    def get_artifacts_list(self, host: MultihostHost, artifacts_type: str) -> set[str]:
        """Files to collect after the test (the :attr:`artifacts` set)."""
        return set(self.artifacts)
