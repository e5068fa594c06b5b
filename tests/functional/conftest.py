"""Helpers for pytester tests of the plugin as a user sees it (hosts use Ansible's local connection).

The tests run pytest in a subprocess (``runpytest_subprocess``): pytester's in-process runs
drop the modules each run imported, and ansible-core's plugin loader does not survive that.
"""

from __future__ import annotations

import textwrap

import pytest

LOCAL = "ansible_connection=local ansible_python_interpreter=/usr/bin/python3"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester project with an INI inventory of local-connection hosts: client1, server1, server2."""
    pytester.makefile(
        ".ini",
        hosts=textwrap.dedent(f"""\
            [client]
            client1 {LOCAL}

            [server]
            server1 {LOCAL}
            server2 {LOCAL}

            [all:vars]
            mh_domain=app
        """),
    )
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    return pytester
