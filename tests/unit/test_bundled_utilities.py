"""Bundled utilities of hosts and roles: made on first use, once, and replaceable by a subclass."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from pytest_mh_ansible import FileSystem, MultihostHost, MultihostRole, MultihostUtility, Services


def _host() -> MultihostHost:
    return MultihostHost("server1", roles=("server",), domain="default", variables={})


def test_bundled__made_on_first_use_and_kept() -> None:
    host = _host()
    assert "fs" not in vars(host)
    fs = host.fs
    assert isinstance(fs, FileSystem)
    assert fs.host is host
    assert host.fs is fs
    assert vars(host)["fs"] is fs


def test_bundled__a_subclass_assignment_wins() -> None:
    class MyFs(FileSystem):
        pass

    class MyHost(MultihostHost):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.fs = MyFs(self)

    host = MyHost("server1", roles=("server",), domain="default", variables={})
    assert type(host.fs) is MyFs


def test_bundled__class_access_gives_the_descriptor_with_its_doc() -> None:
    member = MultihostHost.fs
    assert isinstance(member, cached_property)
    assert "pytest_mh_ansible.utils.FileSystem" in (member.__doc__ or "")
    assert "``svc``" in (MultihostRole.svc.__doc__ or "")


def test_role_utility__is_the_hosts_and_listed_once_used() -> None:
    host = _host()
    role: MultihostRole[MultihostHost] = MultihostRole(object(), "server", host)  # type: ignore[arg-type]
    assert role.utilities == []
    assert role.svc is host.svc
    assert isinstance(role.svc, Services)
    assert role.utilities == [host.svc]
    assert all(isinstance(u, MultihostUtility) for u in role.utilities)
