"""A raw-socket client that announces a large body and counts how much of it a real HTTP server took
before it answered, and whether the answer arrived or the connection was reset."""

from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass

CHUNK = 64 * 1024


@dataclass
class ProbeResult:
    status: int | None  # None: no answer (reset or timeout)
    sent_bytes: int  # body bytes the server's socket accepted before the answer
    reset: bool
    elapsed_s: float


def _status(data: bytes) -> int | None:
    # Skip interim answers (100 Continue) to the final one.
    while data.startswith(b"HTTP/1.1 1"):
        _, _, data = data.partition(b"\r\n\r\n")
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") and b"\r\n" in data else None


def probe(
    port: int,
    announced: int,
    headers: dict[str, str],
    *,
    path: str = "/v1/documents",
    expect_continue: bool = False,
    timeout_s: float = 20.0,
) -> ProbeResult:
    """POST `announced` bytes (sent only as fast as the server reads them) and see what comes back.
    With `expect_continue`, wait up to 1 s for the server's word before sending, as curl does."""
    started = time.monotonic()
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, CHUNK)
    head = [f"POST {path} HTTP/1.1", "Host: probe", f"Content-Length: {announced}"]
    head += ["Content-Type: multipart/form-data; boundary=x"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head += ["Expect: 100-continue"] if expect_continue else []
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
    sent, answer, reset = 0, b"", False
    if expect_continue:
        ready, _, _ = select.select([sock], [], [], 1.0)
        if ready:
            answer = sock.recv(65536)
    sock.setblocking(False)
    deadline = started + timeout_s
    try:
        while time.monotonic() < deadline and _status(answer) is None:
            readable, writable, _ = select.select([sock], [sock] if sent < announced else [], [], 0.5)
            if readable:
                data = sock.recv(65536)
                if not data:
                    break
                answer += data
            elif writable:
                try:
                    sent += sock.send(b"\0" * min(CHUNK, announced - sent))
                except BlockingIOError:
                    pass
                except BrokenPipeError:
                    sent = sent  # the server stopped reading: wait for its answer
    except ConnectionResetError:
        reset = True
    finally:
        sock.close()
    return ProbeResult(_status(answer), sent, reset, time.monotonic() - started)
