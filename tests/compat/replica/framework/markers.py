"""The framework's markers, as a pytest plugin: ``@pytest.mark.builtwith(client="python3")``."""

from __future__ import annotations

import pytest
from pytest_mh import MultihostItemData


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "builtwith(**role_features): run the test only where the hosts of each role have the feature"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    marker = item.get_closest_marker("builtwith")
    if marker is None:
        return
    data = MultihostItemData.GetData(item)
    if data is None or data.multihost is None or data.topology_mark is None:
        return
    for fixture, feature in marker.kwargs.items():
        path = data.topology_mark.fixtures.get(fixture)
        if path is None:
            continue
        role = path.split(".")[1].split("[")[0]
        hosts = [h for domain in data.multihost.domains for h in domain.hosts_by_role(role)]
        if not all(h.features.get(feature) for h in hosts):
            pytest.skip(f"{fixture} is not built with {feature!r}")
