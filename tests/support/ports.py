"""Ports for the servers a test starts.

A port the kernel hands to `bind(port 0)` lies in its ephemeral range, where every outgoing
connection also takes its local port; the ports next to it (a pool's metrics on `metrics_port + i`)
may then be taken by a client connection by the time the server binds. A port below that range is
never chosen for an outgoing connection, so a port found free here stays free for the server the
test starts on it, or for a test that needs a port nothing listens on.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_LOWEST = 20000


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port_block(count: int) -> int:
    """The first of `count` consecutive ports that nothing listens on, below the ephemeral range."""
    high = _ephemeral_low() - count
    for _ in range(200):
        base = random.randrange(_LOWEST, high)
        if all(_bindable(base + i) for i in range(count)):
            return base
    raise RuntimeError(f"no {count} consecutive free ports between {_LOWEST} and {high}")


def free_port() -> int:
    """A port nothing listens on, below the ephemeral range."""
    return free_port_block(1)
