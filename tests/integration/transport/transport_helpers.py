"""What the transport tests share: a connection over the real transport, closed afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pytest_mh_ansible._private.ansible.transport import AnsibleTransport
from pytest_mh_ansible.conn import Connection


def connection(name: str, variables: dict[str, Any], *, agent: bool = False) -> Iterator[Connection]:
    """Yield a :class:`Connection` to ``name`` (commands through the agent with ``agent``); close it after."""
    conn = Connection(name, variables, transport=AnsibleTransport(name, variables, command_agent=agent))
    try:
        yield conn
    finally:
        conn.close()
