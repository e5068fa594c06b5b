"""The errors of pytest-mh's ssh connections, apart from ``ssh`` so that a host's own connection raises them too.

A host's ``conn`` is an ``SSHClient`` to pytest-mh frameworks (``ssh.py`` registers it), so its failed
commands are ``SSHProcessError`` as under pytest-mh, and ``pytest.raises(SSHProcessError)`` around
``host.conn.run(...)`` holds; both stay ``ProcessError``/``ProcessTimeoutError``. Import them from
``pytest_mh.conn.ssh``.
"""

from __future__ import annotations

from ._process import ProcessError, ProcessTimeoutError

__all__ = ["SSHProcessError", "SSHProcessTimeoutError"]


class SSHProcessError(ProcessError):
    """A command run over ssh (an :class:`SSHClient`, a host's ``conn``) exited with a non-zero code."""


class SSHProcessTimeoutError(ProcessTimeoutError):
    """A command run over ssh (an :class:`SSHClient`, a host's ``conn``) overran its time limit; it was killed."""


# What users import and what tracebacks name.
SSHProcessError.__module__ = SSHProcessTimeoutError.__module__ = "pytest_mh_ansible.compat.conn.ssh"
