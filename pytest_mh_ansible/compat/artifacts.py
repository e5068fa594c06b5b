"""pytest-mh's artifact sets: what hosts and topology controllers ask to have fetched, phase by phase.

A host keeps two :class:`MultihostHostArtifacts`: ``configured_artifacts`` (the inventory's
``mh_artifacts``, pytest-mh's ``artifacts`` of the host file) and ``artifacts``, which code adds to
at run time. A topology controller keeps a :class:`MultihostTopologyControllerArtifacts`, per host.
The plugin's collector asks every host, role, utility and controller for its
``get_artifacts_list(host, artifacts_type)`` when a phase ends, and fetches what they name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, get_args

from .._private.reporting.artifacts import fetch_artifacts

if TYPE_CHECKING:
    from .host import MultihostHost
    from .logger import MultihostLogger

__all__ = [
    "MultihostArtifactsCollectable",
    "MultihostArtifactsCollector",
    "MultihostArtifactsMode",
    "MultihostArtifactsType",
    "MultihostHostArtifacts",
    "MultihostTopologyControllerArtifacts",
    "should_collect_artifacts",
]

MultihostArtifactsType: TypeAlias = Literal[
    "pytest_setup", "pytest_teardown", "topology_setup", "topology_teardown", "test"
]
"""When artifacts are fetched: after a host's ``pytest_setup``/``pytest_teardown``, a controller's
``topology_setup``/``topology_teardown``, or a test."""

MultihostArtifactsMode: TypeAlias = Literal["never", "on-failure", "always"]
"""``--mh-collect-artifacts``: never, after a failure (the default), or always."""

_TYPES: tuple[str, ...] = get_args(MultihostArtifactsType)
_HOST_TYPES = ("pytest_setup", "pytest_teardown", "test")


def _check_type(artifacts_type: str) -> None:
    if artifacts_type not in _TYPES:
        raise ValueError(f"unknown artifacts type {artifacts_type!r}: expected one of {', '.join(_TYPES)}")


def should_collect_artifacts(mode: str, outcome: str) -> bool:
    """Whether ``mode`` fetches artifacts after an ``outcome`` (``unknown`` counts as a failure, as in pytest-mh).

    :raises ValueError: ``mode`` is not never, on-failure or always.
    """
    if mode == "never":
        return False
    if mode == "always":
        return True
    if mode == "on-failure":
        return outcome in ("failed", "error", "unknown")
    raise ValueError(f"unknown artifacts mode {mode!r}: expected never, on-failure or always")


class MultihostHostArtifacts:
    """A host's artifact paths (globs allowed) per phase: ``pytest_setup``, ``pytest_teardown`` and ``test``.

    Made from a host's ``artifacts`` configuration: a list means the ``test`` phase, a mapping names
    the phases. The sets can be added to at any time before the phase ends.

    Example::

        host.artifacts.test.add("/var/log/app/*.log")
        host.artifacts.pytest_setup.add("/etc/app.conf")

    :raises ValueError: The mapping names another phase.
    :raises TypeError: The configuration is neither a list nor a mapping.
    """

    def __init__(self, config: list[str] | dict[str, list[str]] | None = None) -> None:
        self.pytest_setup: set[str] = set()
        self.pytest_teardown: set[str] = set()
        self.test: set[str] = set()
        if config is None:
            return
        if isinstance(config, Mapping):
            unknown = [key for key in config if key not in _HOST_TYPES]
            if unknown:
                raise ValueError(f"host artifacts: unknown phase {unknown[0]!r}, expected one of {list(_HOST_TYPES)}")
            self.pytest_setup = set(config.get("pytest_setup") or ())
            self.pytest_teardown = set(config.get("pytest_teardown") or ())
            self.test = set(config.get("test") or ())
        elif isinstance(config, list | tuple | set | frozenset):
            self.test = {str(path) for path in config}
        else:
            raise TypeError(f"host artifacts: expected a list or a mapping of phases, got {type(config).__name__}")

    def get(self, artifacts_type: MultihostArtifactsType) -> set[str]:
        """The paths of phase ``artifacts_type`` (empty for the topology phases, which are the controller's).

        :raises ValueError: ``artifacts_type`` is not a phase.
        """
        _check_type(artifacts_type)
        found: set[str] = getattr(self, artifacts_type, set())
        return found

    def __repr__(self) -> str:
        return (
            f"<MultihostHostArtifacts pytest_setup={self.pytest_setup} "
            f"pytest_teardown={self.pytest_teardown} test={self.test}>"
        )


class MultihostTopologyControllerArtifacts:
    """A topology controller's artifact paths, per phase and per host.

    Example::

        class MyController(TopologyController):
            def set_artifacts(self, client):
                self.artifacts.topology_setup[client] = {"/var/log/enroll.log"}
                self.artifacts.test[client] = {"/var/log/sssd/*"}
    """

    def __init__(self) -> None:
        self.topology_setup: dict[MultihostHost[Any], set[str]] = {}
        self.topology_teardown: dict[MultihostHost[Any], set[str]] = {}
        self.test: dict[MultihostHost[Any], set[str]] = {}

    def get(self, host: MultihostHost[Any], artifacts_type: MultihostArtifactsType) -> set[str]:
        """The paths of ``host`` in phase ``artifacts_type`` (empty for the hosts' own phases).

        :raises ValueError: ``artifacts_type`` is not a phase.
        """
        _check_type(artifacts_type)
        per_host: dict[MultihostHost[Any], set[str]] = getattr(self, artifacts_type, {})
        return per_host.get(host, set())

    def __repr__(self) -> str:
        return (
            f"<MultihostTopologyControllerArtifacts topology_setup={self.topology_setup} "
            f"topology_teardown={self.topology_teardown} test={self.test}>"
        )


class MultihostArtifactsCollectable(Protocol):
    """What the collector asks: a host, role, utility or controller with ``get_artifacts_list``."""

    def get_artifacts_list(self, host: MultihostHost[Any], artifacts_type: MultihostArtifactsType) -> set[str]: ...


_PATH_CHARS = str.maketrans('":<>|*? [', "---------", "]()")


class MultihostArtifactsCollector:
    """A host's ``artifacts_collector``: fetches what objects list into the artifacts directory (pytest-mh's).

    The plugin collects each phase's artifacts itself; this object is for code that fetches more
    on its own, e.g. ``host.artifacts_collector.collect("test", path="extra", outcome="failed",
    collect_objects=[host])`` puts the host's files under ``<artifacts dir>/extra``.

    :param host: The host the files come from.
    :param path: The artifacts directory.
    :param mode: When to fetch: never, on-failure or always.
    :param compress: Keep them as one ``.tar.gz`` instead of unpacked.
    """

    def __init__(
        self, *, host: MultihostHost[Any], path: Path | str, mode: MultihostArtifactsMode, compress: bool
    ) -> None:
        self.path = Path(path)
        self.host = host
        self.logger: MultihostLogger = host.logger
        self.mode: MultihostArtifactsMode = mode
        self.compress = compress

    def should_collect(self, outcome: str) -> bool:
        """Whether :attr:`mode` fetches artifacts after ``outcome``."""
        return should_collect_artifacts(self.mode, outcome)

    def collect(
        self,
        artifacts_type: MultihostArtifactsType,
        *,
        path: str,
        outcome: str,
        collect_objects: Iterable[MultihostArtifactsCollectable],
    ) -> None:
        """Fetch what ``collect_objects`` list for ``artifacts_type`` into ``path`` (relative to :attr:`path`).

        :raises ExceptionGroup: Some objects could not list their artifacts (nothing was fetched).
        :raises MultihostError: The host could not archive or send the files.
        """
        if not self.should_collect(outcome):
            return
        wanted: set[str] = set()
        errors: list[Exception] = []
        for source in collect_objects:
            try:
                wanted |= set(source.get_artifacts_list(self.host, artifacts_type))
            except Exception as err:
                errors.append(err)
        if errors:
            raise ExceptionGroup(f"{self.host.hostname}: could not list the {artifacts_type} artifacts", errors)
        if wanted:
            destination = self.path / Path(path.translate(_PATH_CHARS))
            self.logger.info("collecting artifacts", extra={"data": {"Into": destination, "Artifacts": sorted(wanted)}})
            fetch_artifacts(self.host, sorted(wanted), destination, compress=self.compress)
