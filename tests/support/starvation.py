"""Load that tries to starve a real gateway: many open event streams from one tenant, many
connections that never finish their request, and the latency another tenant sees meanwhile."""

from __future__ import annotations

import socket
import statistics
import time
from dataclasses import dataclass

import requests


def open_streams(port: int, key: str, job_id: str, count: int) -> list[socket.socket]:
    """`count` event streams held open (their first bytes read, so each is being served)."""
    held = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        head = f"GET /v1/jobs/{job_id}/events HTTP/1.1\r\nHost: s\r\nAuthorization: Bearer {key}\r\n\r\n"
        sock.sendall(head.encode())
        sock.recv(4096)
        held.append(sock)
    return held


def half_open(port: int, count: int) -> list[socket.socket]:
    """`count` connections that send half a request line and then nothing."""
    held = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(b"GET /v1/jo")
        held.append(sock)
    return held


@dataclass
class Latency:
    p50_ms: float
    p99_ms: float
    max_ms: float
    failures: int


def latency(url: str, headers: dict[str, str], count: int, timeout_s: float = 10.0) -> Latency:
    """Sequential GETs of `url` on fresh connections: their latency percentiles and failures."""
    times, failures = [], 0
    for _ in range(count):
        started = time.monotonic()
        try:
            ok = requests.get(url, headers=headers, timeout=timeout_s).status_code == 200
        except requests.RequestException:
            ok = False
        times.append((time.monotonic() - started) * 1000)
        failures += not ok
    times.sort()
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    return Latency(statistics.median(times), p99, times[-1], failures)


def close_all(sockets: list[socket.socket]) -> None:
    for sock in sockets:
        sock.close()
