"""Data for the console's tests and screenshots: an embedding provider that can be told to fail (so
that jobs retry and dead-letter as they would in production) and the documents to upload."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import ingest_worker.actors as actors
from ingest_worker.runner import RetryPolicy
from shared.settings import Settings
from tests.support.console_browser import Served
from tests.support.openai_server import OpenAIServer

# Embed retries that run out within a second, as in tests/ingest_worker/test_worker_policies.py.
FAST_EMBED = RetryPolicy(max_retries=2, min_backoff_ms=100, max_backoff_ms=400)

SOLAR = [
    "Solar panels convert sunlight into electricity using photovoltaic cells. " * 12,
    "Inverters turn the panels' direct current into the grid's alternating current. " * 12,
]
REPORT = ["The quarterly revenue grew by twelve percent, driven by strong subscription sales. " * 15]
TIDES = ["Tidal forces from the moon raise ocean bulges that sweep around the planet twice a day. " * 15]
HANDBOOK = ["New employees receive a laptop, a badge and a mentor during their first week. " * 15]
CONTRACT = ["The supplier shall deliver the goods within thirty days of the purchase order. " * 15]


@contextmanager
def failing_provider(settings: Settings) -> Iterator[tuple[Settings, OpenAIServer]]:
    """Settings embedding through a local OpenAI-compatible server that fails when told to, each
    fault reaching the embed stage's (fast) retry policy."""
    with pytest.MonkeyPatch.context() as patch, OpenAIServer() as provider:
        patch.setitem(actors.STAGE_POLICIES, "embed", (FAST_EMBED, actors.STAGE_POLICIES["embed"][1]))
        yield (
            settings.replace(
                embedder="openai",
                openai_api_key=provider.api_key,
                openai_base_url=provider.base_url,
                embed_batch_attempts=1,
            ),
            provider,
        )


def retried_job(served: Served, provider: OpenAIServer, key: str, name: str, pages: list[str]) -> str:
    """A job whose embed stage failed twice before it completed."""
    provider.fail_next("unavailable", times=2)
    job_id = served.upload(key, name, pages)
    assert served.wait_job(key, job_id)["status"] == "completed"
    return job_id


def dead_lettered_job(served: Served, provider: OpenAIServer, key: str, name: str, pages: list[str]) -> str:
    """A job whose embed retries ran out while the provider was down."""
    provider.fail_next("unavailable", times=FAST_EMBED.max_retries + 1)
    job_id = served.upload(key, name, pages)
    job: dict[str, Any] = served.wait_job(key, job_id)
    assert job["status"] == "dead_lettered", job
    return job_id
