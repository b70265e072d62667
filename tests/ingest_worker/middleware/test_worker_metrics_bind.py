"""A worker pool's metrics server waits for a port still held by the pool it replaces, and says so in
its log when the port stays taken."""

from __future__ import annotations

import logging
import socket
import threading

import pytest

from ingest_worker.middleware import stage_metrics
from tests.support.ports import free_port


def held(port: int) -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", port))
    sock.listen()
    return sock


def test_the_metrics_server_binds_once_the_old_pool_lets_the_port_go(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a port still held by the pool being replaced, which lets it go after a moment
    monkeypatch.setattr(stage_metrics, "BIND_PAUSE_S", 0.05)
    port = free_port()
    old = held(port)
    threading.Timer(0.2, old.close).start()
    # When the new pool's metrics server starts
    server = stage_metrics._bound_server("127.0.0.1", port)
    # Then it listens on that port
    try:
        assert server.server_address == ("127.0.0.1", port)
    finally:
        server.server_close()


def test_a_port_that_stays_taken_is_logged_and_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a port another process keeps
    monkeypatch.setattr(stage_metrics, "BIND_PAUSE_S", 0.01)
    port = free_port()
    # When the metrics server tries it a few times, Then it gives up with the bind's error
    with held(port), caplog.at_level(logging.ERROR, logger=stage_metrics.__name__), pytest.raises(OSError):
        stage_metrics._bound_server("127.0.0.1", port, attempts=3)
    # And the log names the port
    assert f"worker metrics cannot listen on 127.0.0.1:{port}" in caplog.text
