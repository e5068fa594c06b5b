"""pytest-mh's utilities: ``MultihostUtility`` with postponed setup, reentrant utilities, ``mh_utility``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from .. import MultihostUtility as _MultihostUtility
from .logger import MultihostLogger, logger_for

if TYPE_CHECKING:
    import pytest

    from .. import MultihostHost

__all__ = [
    "MultihostReentrantUtility",
    "MultihostUtility",
    "mh_utility",
    "mh_utility_ignore_use",
    "mh_utility_postpone_setup",
    "mh_utility_used",
]

HostT = TypeVar("HostT", bound="MultihostHost")
F = TypeVar("F", bound=Callable[..., Any])

_HOOKS = {"setup", "teardown", "postpone_setup", "get_artifacts_list", "pytest_report_teststatus"}


class MultihostUtility(_MultihostUtility[HostT], Generic[HostT]):
    """pytest-mh's ``MultihostUtility``: set up before the test, torn down after it.

    Besides what :class:`pytest_mh_ansible.MultihostUtility` does, setup can be postponed to the
    first use (:meth:`postpone_setup` or ``@mh_utility_postpone_setup``): every public method and
    property counts as a use unless marked ``@mh_utility_ignore_use``. An unused postponed utility
    is neither set up nor torn down, and ``teardown`` runs only after a successful ``setup``.

    Example::

        @mh_utility_postpone_setup
        class Motd(MultihostUtility[MultihostHost]):
            def setup(self):
                self.old = self.host.conn.run("cat /etc/motd").stdout

            def set(self, text):          # the first call runs setup() first
                self.host.conn.run("cat > /etc/motd", input=text)

            def teardown(self):
                self.host.conn.run("cat > /etc/motd", input=self.old)
    """

    _mh_postpone_default = False

    def __init__(self, host: HostT) -> None:
        super().__init__(host)
        self.logger: MultihostLogger = logger_for("utility", getattr(host, "hostname", None))
        self.artifacts: set[str] = set()
        self._mh_postponed: bool = type(self)._mh_postpone_default
        self._mh_pending = False
        self._mh_set_up = False
        self._mh_depth = 0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, value in list(vars(cls).items()):
            if name == "setup" and callable(value):
                cls.setup = _gate_setup(value)  # type: ignore[method-assign, assignment]
            elif name == "teardown" and callable(value):
                cls.teardown = _gate_teardown(value)  # type: ignore[method-assign, assignment]
            elif name.startswith("_") or name in _HOOKS or getattr(value, "__mh_ignore_use__", False):
                continue
            elif isinstance(value, property) and value.fget is not None:
                setattr(cls, name, property(mh_utility_used(value.fget), value.fset, value.fdel, value.__doc__))
            elif callable(value) and not isinstance(value, type | staticmethod | classmethod):
                setattr(cls, name, mh_utility_used(value))

    def postpone_setup(self) -> Self:
        """Set the utility up on its first use instead of before the test; returns the utility."""
        self._mh_postponed = True
        return self

    def get_artifacts_list(self, host: MultihostHost, artifacts_type: str) -> set[str]:
        """Files to collect as artifacts (the :attr:`artifacts` set); override to generate them."""
        return set(self.artifacts)

    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Any:
        """Change the test's outcome (return pytest's ``(category, letter, word)``); not called here yet."""
        return None


def _noop(self: Any) -> None:
    """The base setup/teardown: nothing to do."""


class MultihostReentrantUtility(MultihostUtility[HostT], Generic[HostT]):
    """A utility that saves state on ``__enter__`` and restores it on ``__exit__`` (subclasses implement both).

    As a role utility it is entered after ``setup`` and exited before ``teardown``; it can also be
    used as ``with util:`` inside a test.
    """

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _gate_setup(setup: Callable[[Any], None]) -> Callable[[Any], None]:
    @functools.wraps(setup)
    def gated(self: MultihostUtility[Any]) -> None:
        if getattr(self, "_mh_depth", 0):  # super().setup() from a subclass
            setup(self)
            return
        if self._mh_postponed and not self._mh_set_up:
            self._mh_pending = True
            return
        _run_setup(self, setup)

    gated.__mh_setup__ = setup  # type: ignore[attr-defined]
    return gated


def _run_setup(self: MultihostUtility[Any], setup: Callable[[Any], None]) -> None:
    self._mh_depth += 1
    try:
        setup(self)
        if isinstance(self, MultihostReentrantUtility):
            self.__enter__()
    finally:
        self._mh_depth -= 1
    self._mh_set_up = True
    self._mh_pending = False


def _gate_teardown(teardown: Callable[[Any], None]) -> Callable[[Any], None]:
    @functools.wraps(teardown)
    def gated(self: MultihostUtility[Any]) -> None:
        if getattr(self, "_mh_depth", 0):
            teardown(self)
            return
        self._mh_pending = False
        if not self._mh_set_up:
            return
        self._mh_set_up = False
        self._mh_depth += 1
        try:
            if isinstance(self, MultihostReentrantUtility):
                try:
                    self.__exit__(None, None, None)
                finally:
                    teardown(self)
            else:
                teardown(self)
        finally:
            self._mh_depth -= 1

    return gated


def mh_utility_used(method: F) -> F:
    """Mark ``method`` as a use of its utility: a postponed setup runs before it (done for public methods)."""

    @functools.wraps(method)
    def wrapper(self: MultihostUtility[Any], *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "_mh_pending", False):
            real = getattr(type(self).setup, "__mh_setup__", None)
            if real is not None:
                _run_setup(self, real)
            else:
                self._mh_pending = False
        return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def mh_utility_ignore_use(method: F) -> F:
    """Mark ``method`` as not a use of its utility (a postponed setup does not run for it)."""
    method.__mh_ignore_use__ = True  # type: ignore[attr-defined]
    return method


def mh_utility_postpone_setup(cls: type[MultihostUtility[Any]]) -> type[MultihostUtility[Any]]:
    """Class decorator: every instance sets itself up on first use (see :meth:`MultihostUtility.postpone_setup`)."""
    cls._mh_postpone_default = True
    return cls


@contextmanager
def mh_utility(util: MultihostUtility[Any]) -> Iterator[MultihostUtility[Any]]:
    """Use a utility inside a test only: set up (and entered) now, torn down when the block ends.

    Example::

        with mh_utility(LinuxFileSystem(client.host)) as fs:
            fs.write("/tmp/x", "y")
    """
    util._mh_postponed = False
    util.setup()
    try:
        yield util
    finally:
        util.teardown()


# The base hooks are gated too: teardown runs only after setup, even for a subclass without a setup.
MultihostUtility.setup = _gate_setup(_noop)  # type: ignore[method-assign, assignment]
MultihostUtility.teardown = _gate_teardown(_noop)  # type: ignore[method-assign, assignment]
