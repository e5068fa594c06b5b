"""Lab names for the integration tests: distinct per pytest-xdist worker and per checkout.

Lab names are machine-wide (network namespaces, bridges, cgroups), so two runs side by side
(``-n 2``, two checkouts, two CI runs) must not share one. ``MH_TEST_LAB_SUFFIX`` tells runs apart
(scripts/test.sh sets it per run).
"""

from __future__ import annotations

import os


def lab_name(base: str) -> str:
    """``base`` plus this process's suffix: ``mhcore`` → ``mhcore-1`` on xdist worker gw1."""
    suffix = os.environ.get("MH_TEST_LAB_SUFFIX", "")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "").removeprefix("gw")
    return base + suffix + (f"-{worker}" if worker else "")
