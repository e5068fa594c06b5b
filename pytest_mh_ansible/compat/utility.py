"""pytest-mh's utilities: ``MultihostUtility`` with postponed setup, reentrant utilities, ``mh_utility``."""

from __future__ import annotations

import functools
from abc import ABCMeta, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from .. import MultihostUtility as _MultihostUtility
from .logger import MultihostLogger, logger_for

if TYPE_CHECKING:
    from types import TracebackType

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
T = TypeVar("T")

# Members of the two base classes: a subclass's own definition of one of these is never a "use".
_BASE_MEMBERS = frozenset(
    {"setup", "teardown", "postpone_setup", "get_artifacts_list", "pytest_report_teststatus", "artifacts", "logger"}
)


class MultihostUtility(_MultihostUtility[HostT], Generic[HostT], metaclass=ABCMeta):
    """pytest-mh's ``MultihostUtility``: set up before the test, torn down after it.

    Besides what :class:`pytest_mh_ansible.MultihostUtility` does, it follows pytest-mh's rules:

    * ``teardown`` runs only after a ``setup`` that succeeded;
    * setup can wait for the first use (:meth:`postpone_setup`, ``@mh_utility_postpone_setup``):
      every public method and property (getter, setter, deleter) a subclass defines counts as a
      use, unless marked ``@mh_utility_ignore_use``. A postponed utility that the test never uses
      is neither set up nor torn down;
    * the constructor's arguments that are utilities are its dependencies
      (``_mh_utility_dependencies``), as in pytest-mh;
    * subclasses may use ``@abstractmethod`` (the metaclass is ``ABCMeta``).

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

    _mh_utility_postpone_setup: bool = False
    """Whether setup waits for the first use: set on a class by the decorator, on an object by ``postpone_setup()``."""

    _mh_utility_used: bool = False
    """Whether the utility has been used since its last teardown (only tracked while setup is postponed)."""

    _mh_utility_call_setup: bool = False
    """Whether a subclass defines ``setup`` (pytest-mh's flag; the bases' own ``setup`` does nothing)."""

    _mh_utility_call_teardown: bool = False
    """Whether a subclass defines ``teardown``."""

    _mh_utility_dependencies: set[MultihostUtility[Any]]

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        obj = super().__new__(cls)
        obj._mh_utility_dependencies = {arg for arg in (*args, *kwargs.values()) if isinstance(arg, MultihostUtility)}
        return obj

    def __init__(self, host: HostT) -> None:
        super().__init__(host)
        host_logger = getattr(host, "logger", None)
        self.logger: MultihostLogger = (
            host_logger if isinstance(host_logger, MultihostLogger) else logger_for("utility", _host_name(host))
        )
        self.artifacts: set[str] = set()
        self._mh_set_up = False  # setup() succeeded and teardown() has not run since
        self._mh_entered = False  # the framework's __enter__ (of a reentrant utility) is open
        self._mh_depth = 0  # > 0 while setup/teardown runs: super() calls inside go straight through

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._mh_utility_call_setup = cls._mh_utility_call_setup or "setup" in vars(cls)
        cls._mh_utility_call_teardown = cls._mh_utility_call_teardown or "teardown" in vars(cls)
        for name, value in list(vars(cls).items()):
            if name == "setup" and callable(value):
                cls.setup = _gated_setup(value)  # type: ignore[method-assign, assignment]
            elif name == "teardown" and callable(value):
                cls.teardown = _gated_teardown(value)  # type: ignore[method-assign, assignment]
            elif name.startswith("_") or name in _BASE_MEMBERS or getattr(value, "__mh_ignore_use__", False):
                continue
            elif isinstance(value, property):
                wrapped = property(_used_or_none(value.fget), _used_or_none(value.fset), _used_or_none(value.fdel))
                wrapped.__doc__ = value.__doc__
                setattr(cls, name, wrapped)
            elif callable(value) and not isinstance(value, type | staticmethod | classmethod):
                setattr(cls, name, mh_utility_used(value))

    def setup(self) -> None:
        """Called before the test (after the first use when postponed); override and call super."""
        super().setup()

    def teardown(self) -> None:
        """Called after the test when setup succeeded: undo what the utility changed; override and call super."""
        super().teardown()

    def postpone_setup(self) -> Self:
        """Set this object up on its first use instead of before the test; returns the object.

        Example: ``self.tc = LinuxTrafficControl(self.host).postpone_setup()``.
        """
        return mh_utility_postpone_setup(self)

    def get_artifacts_list(self, host: MultihostHost, artifacts_type: str) -> set[str]:
        """The files to collect as artifacts: :attr:`artifacts`; override to add files found at that time."""
        return self.artifacts

    def pytest_report_teststatus(
        self, report: pytest.CollectReport | pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, str | tuple[str, dict[str, bool]]] | None:
        """The test's status as pytest's ``pytest_report_teststatus`` gives it (``(category, letter, word)``); None
        keeps pytest's. Check ``report.when`` yourself, as pytest-mh advises."""
        return None


class MultihostReentrantUtility(MultihostUtility[HostT], Generic[HostT]):
    """A utility that saves its state on ``__enter__`` and puts it back on ``__exit__``; both must be implemented.

    As a role utility it is entered after ``setup`` and exited before ``teardown`` (a postponed one
    on its first use); ``with util:`` inside a test nests another state, undone when the block ends.

    Example::

        class Motd(MultihostReentrantUtility[MultihostHost]):
            def __init__(self, host):
                super().__init__(host)
                self.saved = []

            def __enter__(self):
                self.saved.append(self.host.conn.run("cat /etc/motd").stdout)
                return self

            def __exit__(self, exc_type, exc_val, exc_tb):
                self.host.conn.run("cat > /etc/motd", input=self.saved.pop())
    """

    @abstractmethod
    def __enter__(self) -> Self:
        """Save the current state and start a new one; return self."""

    @abstractmethod
    def __exit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        """Undo what was changed since the matching ``__enter__``."""


def _host_name(host: Any) -> str | None:
    name = getattr(host, "hostname", None) or getattr(host, "name", None)
    return None if name is None else str(name)


def _used_or_none(function: Callable[..., Any] | None) -> Callable[..., Any] | None:
    return None if function is None else mh_utility_used(function)


def _gated_setup(setup: Callable[[Any], None]) -> Callable[[Any], None]:
    """``setup`` as the framework calls it: postponed until used (then once per cycle), then entered."""

    @functools.wraps(setup)
    def gated(self: MultihostUtility[Any]) -> None:
        if self._mh_depth:  # super().setup() of a subclass's setup
            setup(self)
            return
        if self._mh_utility_postpone_setup and (not self._mh_utility_used or self._mh_set_up):
            return  # not used yet, or set up by its first use already (before the framework's call)
        self._mh_depth += 1
        try:
            setup(self)
        finally:
            self._mh_depth -= 1
        self._mh_set_up = True
        if isinstance(self, MultihostReentrantUtility):
            try:
                self.__enter__()
            except BaseException:
                type(self).teardown(self)  # set up but not entered: torn down now, as pytest-mh does after the test
                raise
            self._mh_entered = True

    return gated


def _gated_teardown(teardown: Callable[[Any], None]) -> Callable[[Any], None]:
    """``teardown`` as the framework calls it: exits a reentrant utility first; only after a successful setup."""

    @functools.wraps(teardown)
    def gated(self: MultihostUtility[Any]) -> None:
        if self._mh_depth:
            teardown(self)
            return
        if not self._mh_set_up:
            return
        self._mh_set_up = False
        self._mh_utility_used = False
        self._mh_depth += 1
        try:
            if self._mh_entered:
                self._mh_entered = False
                try:
                    self.__exit__(None, None, None)  # type: ignore[attr-defined]
                finally:
                    teardown(self)
            else:
                teardown(self)
        finally:
            self._mh_depth -= 1

    return gated


def mh_utility_used(method: F) -> F:
    """Mark ``method`` (of a utility) as a use: a postponed setup runs before it the first time.

    Public methods and properties that a subclass defines are marked already; use it for other
    callables, e.g. one assigned in ``__init__``.
    """

    @functools.wraps(method)
    def wrapper(self: MultihostUtility[Any], *args: Any, **kwargs: Any) -> Any:
        if self._mh_utility_postpone_setup and not self._mh_utility_used:
            self._mh_utility_used = True
            self.setup()
        return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def mh_utility_ignore_use(method: F) -> F:
    """Mark ``method`` (of a utility) as not a use: a postponed setup does not run for it."""
    method.__mh_ignore_use__ = True  # type: ignore[attr-defined]
    return method


def mh_utility_postpone_setup(cls: T) -> T:
    """Class decorator: each object of the class sets itself up on its first use, not before the test.

    Also takes one object (what :meth:`MultihostUtility.postpone_setup` does).

    Example::

        @mh_utility_postpone_setup
        class Slow(MultihostUtility[MultihostHost]):
            def setup(self):
                ...   # runs only in tests that call a method of the utility
    """
    cls._mh_utility_postpone_setup = True  # type: ignore[attr-defined]
    return cls


@contextmanager
def mh_utility(util: MultihostUtility[Any]) -> Iterator[MultihostUtility[Any]]:
    """Use a utility made inside a test: set up (and entered) now, exited and torn down when the block ends.

    Example::

        with mh_utility(LinuxFileSystem(client.host)) as fs:
            fs.write("/tmp/x", "y")      # put back when the block ends
    """
    util._mh_utility_used = True
    util.setup()
    try:
        yield util
    finally:
        util.teardown()


# The bases' own setup and teardown are gated too: teardown runs only after setup, even without overrides.
MultihostUtility.setup = _gated_setup(MultihostUtility.setup)  # type: ignore[method-assign, assignment]
MultihostUtility.teardown = _gated_teardown(MultihostUtility.teardown)  # type: ignore[method-assign, assignment]
