"""``pytest_mh.utils.services``: ``SystemdServices`` on this project's :class:`~pytest_mh_ansible.Services`."""

from __future__ import annotations

from typing import Any

from ... import Services
from ..conn import ProcessResult, compat_conn

__all__ = ["SystemdServices"]


class SystemdServices(Services):
    """pytest-mh's service utility: start, stop, restart; each service's old state is restored after the test.

    Changes go through Ansible's ``service`` module and the rollback journal, which also puts back
    whether a service was enabled. ``status`` and the ``systemctl`` helpers run ``systemctl`` directly.

    Example::

        client.svc.restart("sssd")
        assert client.svc.is_active("sssd")
    """

    def __init__(self, host: Any) -> None:
        super().__init__(host)
        self.artifacts: set[str] = set()

    def start(self, service: str, raise_on_error: bool = True) -> bool:
        return super().start(service)

    def stop(self, service: str, raise_on_error: bool = True) -> bool:
        return super().stop(service)

    def restart(self, service: str, raise_on_error: bool = True) -> bool:
        return super().restart(service)

    def status(self, service: str) -> ProcessResult:  # type: ignore[override]  # pytest-mh's result
        """``systemctl status`` of ``service`` (a non-zero exit code does not raise)."""
        result: ProcessResult = compat_conn(self.host).exec(["systemctl", "status", service], raise_on_error=False)
        return result

    def get_property(self, service: str, prop: str) -> str:
        """A unit property (``systemctl show -P``)."""
        result: ProcessResult = compat_conn(self.host).exec(["systemctl", "show", "-P", prop, service])
        return result.stdout.strip()

    def reload_daemon(self) -> ProcessResult:
        """``systemctl daemon-reload``."""
        result: ProcessResult = compat_conn(self.host).exec(["systemctl", "daemon-reload"])
        return result
