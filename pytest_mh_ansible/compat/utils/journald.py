"""``pytest_mh.utils.journald``: ``JournaldUtils``, the journal of the current test (``journalctl``)."""

from __future__ import annotations

import shlex
from typing import Any, TypedDict

from ... import MultihostError
from ...utils.logs import Logs, test_start
from ..cli import CLIBuilder, CLIBuilderArgs
from ..conn import Bash, HostConnection, ProcessResult, compat_conn
from ..utility import MultihostUtility

__all__ = ["JournalctlOptions", "JournaldUtils"]

NO_JOURNALD = 127
"""The exit code of :meth:`JournaldUtils.journalctl` on a host without journald (``/run/systemd/journal``)."""


class JournalctlOptions(TypedDict, total=False):
    """The options of :meth:`JournaldUtils.journalctl`, pytest-mh's; each one is ``journalctl --<name>``.

    ``reverse``, ``system`` and ``user`` are switches (given when true); ``args`` are more arguments,
    added as they are after the options.
    """

    unit: str | None
    lines: int | None
    since: str | None
    reverse: bool
    grep: str | None
    output: str | None
    identifier: str | None
    system: bool
    user: bool
    args: list[Any] | None


_OPTIONS = {
    name: CLIBuilder.option.SWITCH if name in ("reverse", "system", "user") else CLIBuilder.option.VALUE
    for name in JournalctlOptions.__annotations__
    if name != "args"
}
"""Each option's kind on the command line, in the order pytest-mh writes them."""


class JournaldUtils(MultihostUtility[Any]):
    """pytest-mh's journald utility: search what the journal got since the test started.

    By default :meth:`journalctl` (and so :meth:`is_match`, :meth:`count`) shows only entries
    since the test started, or since the last :meth:`clear`. "The test started" is the time this
    project's plugin marks before each test's setup, on the host's clock (see
    :class:`~pytest_mh_ansible.utils.Logs`): setting the utility up costs no command. On a host
    without journald (a sysv lab host), ``journalctl`` exits with 127 and :meth:`is_match` and
    :meth:`count` raise a clear error instead of reporting "no match".

    A role creates it in its ``__init__``, as in pytest-mh: ``self.journald = JournaldUtils(self.host)``.

    Example::

        def test_login(server):
            server.journald.clear()                  # ignore what the setup logged
            server.host.conn.run("logger -t app hello")
            assert server.journald.is_match("hello", unit=None)
            assert server.journald.count("hello") == 1
    """

    def __init__(self, host: Any) -> None:
        super().__init__(host)
        self._since: str | None = None  # set by clear(); None: since the test started
        self._logs: Logs | None = None

    @property
    def _conn(self) -> HostConnection:
        return compat_conn(self.host)

    def setup(self) -> None:
        """Each test reads the journal from its own start."""
        self._since = None

    @property
    def now(self) -> str:
        """The host's current time, as ``journalctl --since`` takes it (``YYYY-MM-DD HH:MM:SS.NNNNNNNNN``)."""
        return self._conn.exec(["date", "+%Y-%m-%d %H:%M:%S.%N"]).stdout.strip()

    def clear(self) -> None:
        """Show only entries from now on (until the next test); nothing is deleted from the journal."""
        self._since = self.now

    def _test_start(self) -> str:
        if self._logs is None:  # the host's own (its clock offset is measured once per host)
            logs = getattr(self.host, "logs", None)
            self._logs = logs if isinstance(logs, Logs) else Logs(self.host)
        return f"@{self._logs.host_time(test_start()):.6f}"

    def journalctl(
        self,
        current: bool = True,
        *,
        unit: str | None = None,
        lines: int | None = None,
        since: str | None = None,
        reverse: bool = False,
        grep: str | None = None,
        output: str | None = None,
        identifier: str | None = None,
        system: bool = False,
        user: bool = False,
        args: list[Any] | None = None,
    ) -> ProcessResult:
        """Run ``journalctl --no-pager`` with these options; a non-zero exit code does not raise.

        Each keyword is ``journalctl --<name>`` (:class:`JournalctlOptions`); ``args`` are added as
        they are. With ``current`` (the default) and no ``since``, only entries since the test
        started (or since :meth:`clear`) are shown. ``journalctl --grep`` exits with 1 when nothing
        matches.

        :param current: Only this test's entries, unless ``since`` is given.
        """
        values: dict[str, Any] = {
            "unit": unit, "lines": lines, "since": since, "reverse": reverse, "grep": grep, "output": output,
            "identifier": identifier, "system": system, "user": user,
        }  # fmt: skip
        if current and not since:
            values["since"] = self._since or self._test_start()
        cli: CLIBuilderArgs = {name: (kind, values.get(name)) for name, kind in _OPTIONS.items()} | {
            "no-pager": (CLIBuilder.option.SWITCH, True)
        }
        argv = CLIBuilder(Bash()).argv("journalctl", cli) + [str(arg) for arg in args or []]
        script = (
            "if [ ! -d /run/systemd/journal ]; then echo 'no journald on this host' >&2; "
            f"exit {NO_JOURNALD}; fi; exec {shlex.join(argv)}"
        )
        return self._conn.run(script, raise_on_error=False)

    def _search(self, pattern: str, unit: str | None) -> ProcessResult:
        result = self.journalctl(grep=pattern, unit=unit, args=["--quiet"])  # one line per entry
        if result.rc == NO_JOURNALD and "no journald" in result.stderr:
            raise MultihostError(
                f"host {self.host.name!r}: no journald (no /run/systemd/journal): cannot search the journal"
            )
        return result

    def is_match(self, pattern: str, unit: str | None = None) -> bool:
        """Whether an entry (of ``unit``) since the test started matches the regular expression ``pattern``.

        :raises MultihostError: The host has no journald.
        """
        return self._search(pattern, unit).rc == 0

    def count(self, pattern: str, unit: str | None = None) -> int:
        """How many entries (of ``unit``) since the test started match the regular expression ``pattern``.

        :raises MultihostError: The host has no journald.
        """
        result = self._search(pattern, unit)
        return len(result.stdout_lines) if result.rc == 0 else 0
