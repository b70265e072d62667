"""Closing a connection whose request body was refused unread, without resetting the client.

Closing a socket with unread data makes the kernel answer with a reset, which can reach a client
that is still sending before it read the refusal (curl then reports a send failure instead of the
answer). So the server first half-closes (the client sees the answer end), then waits, reading
nothing, until the client has closed its side or LINGER_S has passed, and only then closes."""

from __future__ import annotations

import contextlib
import socket
import struct

# How long a refused connection may wait for its client to close first: a client that reads only
# after sending (requests) gets its answer once this has passed.
LINGER_S = 2.0
# Linux TCP states in which the client has not yet closed its side (tcp_states.h).
_OPEN_STATES = {1, 4, 5}  # ESTABLISHED, FIN_WAIT1, FIN_WAIT2


def half_close(sock: socket.socket) -> None:
    """End the answer (FIN) but keep the connection, so that unread data does not reset it yet."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)


def client_closed(sock: socket.socket) -> bool:
    """Whether the client has closed or reset its side (read from the kernel, not the socket's
    data, which stays unread)."""
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)
    except OSError:
        return True
    return struct.unpack("B", info[:1])[0] not in _OPEN_STATES
