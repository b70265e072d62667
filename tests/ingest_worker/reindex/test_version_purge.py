"""The index pool's purge of the points a flipped reindex left behind (ingest_worker/reindex/
version_purge.py): it runs only where the worker serves the bulk-index queue of a local Qdrant folder,
again every interval, past a failed round, until the worker shuts down. The purge itself is
tests/ingest_worker/reindex/test_reindex.py's."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from ingest_worker.reindex import version_purge
from ingest_worker.reindex.version_purge import VersionPurge
from shared.queue import QUEUE_BULK_INDEX
from shared.settings import Settings

INTERVAL_S = 0.05


def _middleware(settings: Settings) -> VersionPurge:
    resources = SimpleNamespace(settings=settings, db="db", vectors="store")
    return VersionPurge(lambda: resources, interval_s=INTERVAL_S)  # type: ignore[arg-type, return-value]


def _rounds(monkeypatch: pytest.MonkeyPatch, *, failing: int = 0) -> list[tuple[Any, Any]]:
    """The purge's calls, recorded; the first `failing` ones raise."""
    calls: list[tuple[Any, Any]] = []

    def purge(db: Any, store: Any) -> None:
        calls.append((db, store))
        if len(calls) <= failing:
            raise RuntimeError("store unavailable")

    monkeypatch.setattr(version_purge, "purge_old_versions", purge)
    return calls


def _wait(condition: Any, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(INTERVAL_S / 2)


def test_a_bulk_index_worker_on_a_local_folder_purges_every_interval_past_a_failure_until_it_stops(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a worker serving the bulk-index queue on the embedded (local folder) store, whose first
    # purge fails
    assert settings.local_qdrant
    calls = _rounds(monkeypatch, failing=1)
    purge = _middleware(settings)
    worker = SimpleNamespace(consumer_whitelist={"index", QUEUE_BULK_INDEX})

    # When it boots, then the purge runs again and again on its resources, the failure only logged
    purge.after_worker_boot(None, worker)  # type: ignore[arg-type]
    _wait(lambda: len(calls) >= 3)
    assert set(calls) == {("db", "store")}
    assert "could not delete the old index versions' points" in caplog.text

    # And once it shuts down, no round follows
    purge.before_worker_shutdown(None, worker)  # type: ignore[arg-type]
    _wait(lambda: not any(t.name == "version-purge" for t in threading.enumerate()))
    stopped_at = len(calls)
    time.sleep(INTERVAL_S * 4)
    assert len(calls) == stopped_at


@pytest.mark.parametrize(
    ("queues", "server"),
    [({"index"}, False), (None, False), ({QUEUE_BULK_INDEX}, True)],
    ids=["no-bulk-queue", "every-queue", "qdrant-server"],
)
def test_no_purge_runs_in_a_worker_without_the_bulk_queue_or_on_a_qdrant_server(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, queues: set[str] | None, server: bool
) -> None:
    # Given a worker without the bulk-index queue named (one serving every queue is the embedded
    # service's, whose maintenance loop purges in the same process), or on a Qdrant server (which
    # the maintenance process reaches)
    calls = _rounds(monkeypatch)
    if server:
        settings = settings.replace(qdrant_url="http://127.0.0.1:6333")
    purge = _middleware(settings)

    # When it boots, then no purge runs
    purge.after_worker_boot(None, SimpleNamespace(consumer_whitelist=queues))  # type: ignore[arg-type]
    time.sleep(INTERVAL_S * 4)
    assert calls == []
    assert not any(t.name == "version-purge" for t in threading.enumerate())
