"""Traffic control: delay, loss and rate limits towards a host; removed after the test."""

from __future__ import annotations

from ..host import MultihostHost
from ..utility import MultihostUtility

__all__ = ["TrafficControl"]


class TrafficControl(MultihostUtility[MultihostHost]):
    """Traffic control: delay, loss and rate limits towards a host; removed after the test (being written)."""
