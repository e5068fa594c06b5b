"""The base role: the host's name and address, and ssh logins as test users."""

from __future__ import annotations

from typing import Any

from pytest_mh import MultihostRole
from pytest_mh.conn import Bash
from pytest_mh.conn.ssh import SSHClient

from ..utils.users import LocalUsers


class BaseReplicaRole(MultihostRole[Any]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.users = LocalUsers(self.host)

    @property
    def hostname(self) -> str:
        """The host's name in the host file (its fully qualified name)."""
        return self.host.hostname

    def ssh(self, user: str, password: str) -> SSHClient:
        """An ssh session of ``user`` on this host, logged in with ``password`` (``with role.ssh(...) as ssh``)."""
        return SSHClient(self.host.conn.host, user=user, password=password, shell=Bash(), logger=self.host.logger)
