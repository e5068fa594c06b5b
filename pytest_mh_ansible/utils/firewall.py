"""Firewall (nftables or iptables): block and unblock traffic; all rules removed after the test."""

from __future__ import annotations

from ..host import MultihostHost
from ..utility import MultihostUtility

__all__ = ["Firewall"]


class Firewall(MultihostUtility[MultihostHost]):
    """Firewall (nftables or iptables): block and unblock traffic; all rules removed after the test (being written)."""
