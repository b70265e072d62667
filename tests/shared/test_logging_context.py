"""Log records carry the ids bound for the work in hand, as JSON lines or text, and the settings
travel to child processes through their environment unchanged."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator

import pytest

from shared import logging as ingest_logging
from shared.settings import Settings


@pytest.fixture
def captured(request: pytest.FixtureRequest) -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(ingest_logging.JsonFormatter())
    handler.addFilter(ingest_logging.ContextFilter())
    logger = logging.getLogger(f"test.{request.node.name}")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, stream
    ingest_logging.clear()


def lines(stream: io.StringIO) -> list[dict[str, str]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_bound_ids_appear_on_each_json_record_until_cleared(
    captured: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = captured
    # Given ids bound for a message
    ingest_logging.bind(job_id="j1", tenant_id="t1", message_id="m1")
    logger.info("working on %s", "it")
    # When they are cleared, later records carry none
    ingest_logging.clear()
    logger.info("idle")
    first, second = lines(stream)
    assert first["message"] == "working on it"
    assert (first["job_id"], first["tenant_id"], first["message_id"]) == ("j1", "t1", "m1")
    assert "job_id" not in second and second["message"] == "idle"


def test_ids_bound_in_one_thread_do_not_leak_into_another(
    captured: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = captured
    ingest_logging.bind(job_id="mine")
    other = threading.Thread(target=lambda: logger.info("elsewhere"))
    other.start()
    other.join()
    logger.info("here")
    by_message = {r["message"]: r for r in lines(stream)}
    assert "job_id" not in by_message["elsewhere"] and by_message["here"]["job_id"] == "mine"


def test_a_block_restores_the_ids_it_replaced(captured: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = captured
    ingest_logging.bind(tenant_id="t1")
    with ingest_logging.bound(job_id="j2"):
        logger.info("inside")
    logger.info("after")
    inside, after = lines(stream)
    assert (inside["tenant_id"], inside["job_id"]) == ("t1", "j2")
    assert after["tenant_id"] == "t1" and "job_id" not in after


def test_the_text_format_appends_the_ids() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "done", None, None)
    record.job_id = "j3"
    assert ingest_logging.TextFormatter().format(record).endswith("done [job_id=j3]")


def test_settings_survive_the_trip_through_a_child_environment() -> None:
    # Given settings that differ from the defaults in fields of every type
    settings = Settings(
        database_url="postgresql://db/x", log_json=True, broker_timeout_s=0.5, worker_processes=3
    )
    # Then the environment they give a child process rebuilds them exactly, and names only what differs
    env = settings.to_env()
    assert Settings.from_env(env) == settings
    assert Settings.from_env(settings.to_env(every_field=True)) == settings
    assert set(env) == {
        "INGEST_DATABASE_URL",
        "INGEST_LOG_JSON",
        "INGEST_BROKER_TIMEOUT_S",
        "INGEST_WORKER_PROCESSES",
    }
