"""``pytest_mh.utils.coredumpd``: ``Coredumpd``, the core dumps of the current test, ignored, warned about or failed."""

from __future__ import annotations

import posixpath
import re
from typing import Any

from ...utils.crashes import Crashes
from .._mode_check import Mode, ModeAttribute, ModeCheckedUtility

__all__ = ["Coredumpd"]


class Coredumpd(ModeCheckedUtility):
    """pytest-mh's coredumpd utility: core files made during the test, and what they do to it (``mode``).

    ``mode`` says what a core file found after the test's body does: ``ignore`` (the default)
    nothing, no command is run; ``warn`` keeps the outcome, adds the section "mh coredumps" to the
    report, lists the test at the end of the run and shows it as ``PASSED/COREDUMP`` in a
    ``COREDUMPS`` summary category (as pytest-mh); ``fail`` makes a passed test fail with the
    core files as its failure text. ``filter`` (a regular expression) keeps only the core files
    whose name matches it. A skipped test is never checked.

    Differences from pytest-mh:

    * "During the test" is "newer than the test's start" (this project's crash check,
      :class:`~pytest_mh_ansible.utils.Crashes`): nothing is removed, ``setup`` does not delete
      ``path`` (pytest-mh deletes the directory, cores of earlier tests included). Cores are looked
      for in ``path`` and where ``kernel.core_pattern`` puts them (for a relative pattern such as
      ``core``: ``/``, ``/root``, ``/tmp``, ``/var/tmp``), not in ``path`` only.
    * :meth:`list_core_files` gives the names of the core files in ``path`` and the full paths of
      those elsewhere. Cores kept in the journal only (``Storage=journal``) and cores piped to
      another handler (apport, abrt) are not seen, as in pytest-mh; the latter is logged.
    * ``filter`` is applied (pytest-mh stores None and never filters).
    * ``fail`` mode: the test counts as failed and its failure text lists the cores (pytest-mh
      shows it as ``PASSED/COREDUMP`` in the ``COREDUMPS`` category); a test that failed by itself
      keeps its own status, with the cores in the "mh coredumps" section.
    * No ``<core>.backtrace`` files are written; :meth:`get_artifacts_list` and :attr:`artifacts` give
      the core files found by the check (collected with the test's artifacts, as configured).
    * ``mode`` and the other arguments are checked: an unknown mode is a ``ValueError``.

    Example::

        class Client(MultihostRole[ClientHost]):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.fs = LinuxFileSystem(self.host)
                self.coredumpd = Coredumpd(self.host, self.fs, mode="fail", filter="sssd")
    """

    _mh_title = "mh coredumps"
    _mh_what = "core dumps"
    _mh_category = "COREDUMPS"
    _mh_letter = "C"
    _mh_word = "COREDUMP"

    mode = ModeAttribute(
        "What a core file does to the test: ``fail``, ``warn`` or ``ignore``; may be changed during a test."
    )

    def __init__(
        self,
        host: Any,
        fs: Any,
        *,
        mode: Mode = "ignore",
        filter: str | None = None,
        path: str = "/var/lib/systemd/coredump",
    ) -> None:
        """
        :param host: The host.
        :param fs: pytest-mh's ``LinuxFileSystem`` of the host (kept as :attr:`fs`; nothing is deleted here).
        :param mode: What a core file does to the test: ``fail``, ``warn`` or ``ignore``.
        :param filter: Only core files whose name matches this regular expression count (None: all).
        :param path: Where systemd-coredump stores core files.
        """
        super().__init__(host)
        self.fs = fs
        self.mode = mode
        self.filter: str | None = filter
        self.path: str = path
        self._corefiles: list[str] | None = None

    def setup(self) -> None:
        """Forget the last test's core files; nothing on the host is changed."""
        super().setup()
        self._corefiles = None

    def list_core_files(self) -> list[str]:
        """The core files written since the test started: names for those in :attr:`path`, else full paths."""
        crashes = Crashes(self.host)
        crashes.search_dirs = [self.path]
        directory = self.path.rstrip("/") or "/"
        names: list[str] = []
        for crash in crashes.cores(self._mh_since()):
            if not crash.detail.startswith("/"):
                continue  # a coredumpctl line: its file, when stored, is found in the directory too
            parent, name = posixpath.split(crash.detail)
            names.append(name if parent == directory else crash.detail)
        if crashes.unavailable:
            self.logger.warning(f"Coredumpd: {crashes.unavailable}")
        self._corefiles = names
        return list(names)

    def parse_core_file_name(self, name: str) -> tuple[str, str]:
        """``(PID, timestamp)`` of a systemd-coredump file name ``core.BINARY.BOOTID.PID.TIMESTAMP[.COMPRESSION]``.

        :raises ValueError: The name does not have at least three dot-separated fields.
        """
        fields = posixpath.basename(name).split(".")
        if len(fields) < 3:
            raise ValueError(f"Invalid coredump name: {name}")
        if not fields[-1].isdigit():  # .zst, .xz, .lz4
            fields = fields[:-1]
        return fields[-2], fields[-1]

    def _mh_findings(self) -> list[str]:
        found = self.list_core_files()
        if self.filter:
            found = [name for name in found if re.search(self.filter, name)]
        return found

    def _paths(self) -> set[str]:
        return {name if name.startswith("/") else posixpath.join(self.path, name) for name in self._corefiles or []}

    @property
    def artifacts(self) -> set[str]:
        """The files collected with the test's artifacts: those set here and the core files the check found."""
        return self._extra_artifacts | self._paths()

    @artifacts.setter
    def artifacts(self, value: set[str]) -> None:
        self._extra_artifacts = set(value)

    def get_artifacts_list(self, host: Any, artifacts_type: str) -> set[str]:
        """The core files of the test (listed now if the check has not run), with :attr:`artifacts`."""
        if self._corefiles is None:
            self.list_core_files()
        return set(self.artifacts)
