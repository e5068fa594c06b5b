"""``pytest_mh.conn``: pytest-mh's connections and processes (``run``, ``exec``, ``async_run``, ``expect``).

The base classes (:class:`Connection`, :class:`Process`, their results and errors) are
pytest-mh's extension contract: :mod:`.ssh` and :mod:`.container` implement it, and so does
:class:`HostConnection`, the ``conn`` of a compatibility host, over the host's Ansible connection.
"""

from __future__ import annotations

from ._connection import Connection, ConnectionError
from ._host import DEFAULT_TIMEOUT, ExecOptions, HostConnection, HostProcess, LiveCommand, compat_conn
from ._process import (
    Process,
    ProcessError,
    ProcessErrorBase,
    ProcessErrorType,
    ProcessInputBuffer,
    ProcessInputBufferType,
    ProcessLogLevel,
    ProcessResult,
    ProcessResultType,
    ProcessTimeoutError,
    ProcessTimeoutErrorType,
    ProcessType,
)
from ._shell import Bash, Powershell, Shell

__all__ = [
    "DEFAULT_TIMEOUT",
    "Bash",
    "Connection",
    "ConnectionError",
    "ExecOptions",
    "HostConnection",
    "HostProcess",
    "LiveCommand",
    "Powershell",
    "Process",
    "ProcessError",
    "ProcessErrorBase",
    "ProcessErrorType",
    "ProcessInputBuffer",
    "ProcessInputBufferType",
    "ProcessLogLevel",
    "ProcessResult",
    "ProcessResultType",
    "ProcessTimeoutError",
    "ProcessTimeoutErrorType",
    "ProcessType",
    "Shell",
    "compat_conn",
]
