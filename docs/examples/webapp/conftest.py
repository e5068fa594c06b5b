"""The example's pytest configuration: which class serves which role."""

from __future__ import annotations

from webapp.roles import Client, Server, ServerHost

from pytest_mh_ansible import Registry


def pytest_mh_register(registry: Registry) -> None:
    registry.role("client", Client)
    registry.role("nginx", Server, host=ServerHost)
    registry.role("lighttpd", Server, host=ServerHost)
