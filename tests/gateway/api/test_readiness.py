"""Readiness: /readyz names each dependency that is down, answers 503 only when uploads cannot be
accepted (database or storage down), and stays ready but degraded while the broker or Qdrant is down."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.app import create_app
from shared.settings import Settings
from tests.support.databases import migrate_database
from tests.support.ports import free_port


def readiness(settings: Settings) -> tuple[int, dict[str, Any]]:
    if not settings.database_url:
        migrate_database(settings.effective_database_url)
    response = create_app(settings).test_client().get("/readyz")
    return response.status_code, response.get_json()


@pytest.fixture
def local(settings: Settings) -> Settings:
    """Every dependency up: SQLite, a local storage folder, and no broker (in-process)."""
    return settings


def test_all_up_is_ready(local: Settings) -> None:
    status, body = readiness(local)
    assert status == 200 and body["status"] == "ready" and body["down"] == []
    assert body["checks"] == {"database": "ok", "storage": "ok", "broker": "ok", "vector_store": "local"}


def test_a_broker_outage_is_degraded_but_ready(local: Settings) -> None:
    # Given a gateway whose Redis broker does not answer
    down = local.replace(broker_url=f"redis://127.0.0.1:{free_port()}/0", broker_timeout_s=0.5)
    # Then it still accepts work (the outbox keeps it): 200, degraded, the broker named
    status, body = readiness(down)
    assert status == 200 and body["status"] == "degraded" and body["down"] == ["broker"]


def test_a_qdrant_server_outage_is_degraded_but_ready(local: Settings) -> None:
    status, body = readiness(local.replace(qdrant_url=f"http://127.0.0.1:{free_port()}"))
    assert status == 200 and body["status"] == "degraded" and body["down"] == ["vector_store"]


@pytest.mark.s3
def test_a_storage_outage_is_not_ready(local: Settings, s3_server: Any) -> None:
    # Given S3 credentials for a server that does not answer
    down = local.replace(
        storage_backend="s3",
        s3_endpoint_url=f"http://127.0.0.1:{free_port()}",
        s3_bucket=s3_server.bucket,
        s3_access_key_id=s3_server.access_key_id,
        s3_secret_access_key=s3_server.secret_access_key,
    )
    # Then the gateway says it cannot take uploads, and names the storage
    status, body = readiness(down)
    assert status == 503 and body["status"] == "unavailable" and body["down"] == ["storage"]


def test_a_database_outage_is_not_ready(local: Settings) -> None:
    down = local.replace(database_url=f"postgresql+psycopg2://postgres@127.0.0.1:{free_port()}/ingest")
    status, body = readiness(down)
    assert status == 503 and body["status"] == "unavailable" and body["down"] == ["database"]


def test_everything_down_names_each_dependency(local: Settings) -> None:
    down = local.replace(
        database_url=f"postgresql+psycopg2://postgres@127.0.0.1:{free_port()}/ingest",
        broker_url=f"redis://127.0.0.1:{free_port()}/0",
        broker_timeout_s=0.5,
        qdrant_url=f"http://127.0.0.1:{free_port()}",
    )
    status, body = readiness(down)
    assert status == 503 and sorted(body["down"]) == ["broker", "database", "vector_store"]
