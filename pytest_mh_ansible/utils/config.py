"""Configuration files (ini, lines, blocks): set and restore."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..utility import MultihostUtility
from ._calls import run_module

if TYPE_CHECKING:
    from ..host import MultihostHost  # noqa: F401 - in the base class as a string: host.py imports utils

__all__ = ["ConfigFiles"]


class ConfigFiles(MultihostUtility["MultihostHost"]):
    """Edit configuration files in place (ini options, lines, marked blocks); each file is restored after the test.

    Example::

        def test_debug_logging(server):
            server.config_files.ini("/etc/app.ini", "log", "level", "debug")
            server.config_files.line("/etc/hosts", "192.0.2.9 extra")
            server.config_files.line("/etc/ssh/sshd_config", "PermitRootLogin no", regexp="^PermitRootLogin")
            server.config_files.block("/etc/app.conf", "feature_x = on\\nfeature_y = off")
    """

    def _run(self, module: str, **kwargs: Any) -> bool:
        return run_module(self.host, module, **kwargs)

    def ini(self, path: str, section: str | None, option: str, value: str | None) -> bool:
        """Set ``option`` in ``section`` of the ini file ``path`` (created when missing); ``value=None`` removes it."""
        state = "absent" if value is None else "present"
        return self._run(
            "community.general.ini_file", path=path, section=section, option=option, value=value, state=state
        )

    def line(self, path: str, line: str, *, regexp: str | None = None, state: str = "present") -> bool:
        """Ensure ``line`` is in ``path`` (replacing the last line matching ``regexp``), or with ``state="absent"``
        remove the lines matching ``regexp`` (or equal to ``line``)."""
        if state == "absent":
            return self._run(
                "ansible.builtin.lineinfile", path=path, regexp=regexp, line=None if regexp else line, state="absent"
            )
        return self._run("ansible.builtin.lineinfile", path=path, line=line, regexp=regexp, create=True)

    def block(self, path: str, block: str, *, marker: str | None = None) -> bool:
        """Insert or update a marked ``block`` of text in ``path`` (created when missing).

        :param marker: Ansible's marker template (``"# {mark} MANAGED BLOCK"`` by default); use
            different markers for several blocks in one file.
        """
        return self._run("ansible.builtin.blockinfile", path=path, block=block, marker=marker, create=True)
