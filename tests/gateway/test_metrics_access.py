"""GET /metrics shows every tenant's job counts: with INGEST_METRICS_TOKEN set, only a scraper that
sends the token is served."""

from __future__ import annotations

from flask import Flask

from gateway.app import create_app
from shared.db import Database
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from tests.conftest import auth


def test_metrics_need_the_metrics_token_when_one_is_set(settings: Settings, sqlite_db: Database) -> None:
    # Given a gateway with a metrics token
    settings = settings.replace(metrics_token="s3cret")
    client = create_app(settings, publisher=Publisher(make_broker(settings)), db=sqlite_db).test_client()
    # When a scraper asks without it, or with a tenant's key
    anonymous = client.get("/metrics")
    wrong = client.get("/metrics", headers=auth("ik_other"))
    # Then it is refused
    assert [(r.status_code, r.get_json()["code"]) for r in (anonymous, wrong)] == [(401, "unauthorized")] * 2
    # And with the token it gets the exposition
    scraped = client.get("/metrics", headers=auth("s3cret"))
    assert scraped.status_code == 200 and b"ingest_jobs" in scraped.data


def test_metrics_are_open_without_a_metrics_token(app: Flask) -> None:
    # Given the default settings (make run, on localhost), When anyone scrapes, Then it is served
    assert app.test_client().get("/metrics").status_code == 200
