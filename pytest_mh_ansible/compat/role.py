"""pytest-mh's roles: ``MultihostRole`` with ``logger`` and ``artifacts``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .. import MultihostHost
from .. import MultihostRole as _MultihostRole
from .artifacts import MultihostArtifactsType
from .logger import MultihostLogger, logger_for

if TYPE_CHECKING:
    from .. import MultihostFixture

__all__ = ["MultihostRole"]

HostT = TypeVar("HostT", bound=MultihostHost)


class MultihostRole(_MultihostRole[HostT], Generic[HostT]):
    """pytest-mh's role: one host in one role for one test; its utilities are set up around the test.

    Its ``logger`` is its host's; files added to :attr:`artifacts` are fetched after the test.

    Example::

        class Client(MultihostRole[ClientHost]):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.fs = LinuxFileSystem(self.host)
    """

    def __init__(self, mh: MultihostFixture, role: str, host: HostT) -> None:
        super().__init__(mh, role, host)
        logger = getattr(host, "logger", None)
        self.logger: MultihostLogger = logger if logger is not None else logger_for("role", host.name)
        self.artifacts: set[str] = set()

    @property
    def _mh_utility_dependencies(self) -> list[Any]:
        """The role's utilities (its attributes), each after those it was made with (pytest-mh's order)."""
        from .host import ordered_utilities
        from .utility import MultihostUtility

        return ordered_utilities(self, MultihostUtility)

    def get_artifacts_list(self, host: MultihostHost, artifacts_type: MultihostArtifactsType) -> set[str]:
        """Files to fetch after the test: the :attr:`artifacts` set (override to compute more)."""
        return self.artifacts
