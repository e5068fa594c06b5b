"""``pytest_mh.utils.auditd``: ``Auditd``, the AVC denials of the current test, ignored, warned about or failed."""

from __future__ import annotations

import re
from typing import Any

from ...utils.crashes import Crashes
from .._mode_check import Mode, ModeAttribute, ModeCheckedUtility

__all__ = ["Auditd"]


class Auditd(ModeCheckedUtility):
    """pytest-mh's auditd utility: SELinux AVC denials logged during the test, and what they do to it (``avc_mode``).

    ``avc_mode`` says what a denial found after the test's body does: ``ignore`` nothing, no
    command is run; ``warn`` keeps the outcome, adds the section "mh avc denials" to the report,
    lists the test at the end of the run and shows it as ``PASSED/AVC DENIAL`` in an
    ``AVC DENIALS`` summary category (as pytest-mh); ``fail`` makes a passed test fail with the
    denials as its failure text. ``avc_filter`` (a regular expression) keeps only the denials
    that match it. A skipped test is never checked. ``/var/log/audit/audit.log`` is collected with
    the test's artifacts (:attr:`artifacts`), as in pytest-mh.

    Differences from pytest-mh:

    * "During the test" is "since the test's start", as for this project's crash check
      (:class:`~pytest_mh_ansible.utils.Crashes`): ``ausearch -m AVC,USER_AVC -ts <start>`` where
      ``ausearch`` is installed, else the kernel log (``journalctl -k``) where journald runs; the
      records are shown as logged (pytest-mh does not interpret them either, no ``-i``). The
      audit logs are not copied, truncated and put back around each test (pytest-mh does), so
      nothing on the host changes. A host with neither ``ausearch`` nor journald reports no
      denials, as pytest-mh reports none where ``ausearch`` fails.
    * AppArmor denials (``apparmor="DENIED"``) count too.
    * ``fail`` mode: the test counts as failed and its failure text lists the denials (pytest-mh
      shows it as ``PASSED/AVC DENIAL`` in the ``AVC DENIALS`` category); a test that failed by
      itself keeps its own status, with the denials in the "mh avc denials" section.
    * ``avc_mode`` is checked: an unknown mode is a ``ValueError``.

    Example::

        class Client(MultihostRole[ClientHost]):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.auditd = Auditd(self.host, avc_mode="fail", avc_filter="sssd")
    """

    _mh_title = "mh avc denials"
    _mh_what = "AVC denials"
    _mh_category = "AVC DENIALS"
    _mh_letter = "A"
    _mh_word = "AVC DENIAL"

    avc_mode = ModeAttribute(
        "What a denial does to the test: ``fail``, ``warn`` or ``ignore``; may be changed during a test."
    )

    def __init__(self, host: Any, *, avc_mode: Mode, avc_filter: str | None = None) -> None:
        """
        :param host: The host.
        :param avc_mode: What a denial does to the test: ``fail``, ``warn`` or ``ignore``.
        :param avc_filter: Only denials matching this regular expression count (None: all).
        """
        super().__init__(host)
        self.avc_mode = avc_mode
        self.avc_filter: str | None = avc_filter
        self.artifacts: set[str] = {"/var/log/audit/audit.log"}

    def _mh_findings(self) -> list[str]:
        found = [crash.detail for crash in Crashes(self.host).denials(self._mh_since())]
        return [line for line in found if not self.avc_filter or re.search(self.avc_filter, line)]
