"""The Flask app factory: settings in, a configured gateway out."""

from __future__ import annotations

from flask import Flask

from gateway import console, metrics, request_checks, swagger_assets
from gateway.api import (
    admin,
    document_content,
    documents,
    events,
    health,
    job_timeline,
    jobs,
    search,
    webhooks,
    whoami,
)
from gateway.errors import register_error_handlers
from gateway.openapi import BEARER, IngestApi
from gateway.services import Services
from shared.db import Database
from shared.embedders import Embedder
from shared.outbox import Relay
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from shared.storage import make_storage
from shared.vectorstores import VectorStore


def create_app(
    settings: Settings | None = None,
    *,
    publisher: Publisher | None = None,
    db: Database | None = None,
    vectors: VectorStore | None = None,
    embedder: Embedder | None = None,
) -> Flask:
    """Build the gateway. The embedded process passes the clients it shares with its workers."""
    settings = settings or Settings.from_env()
    # The embedded process passes the database it shares with its workers.
    db = db or Database.from_settings(settings)
    publisher = publisher or Publisher(make_broker(settings))
    app = Flask(__name__)
    # Werkzeug refuses a larger body with 413 before it is read, and stops reading a chunked
    # body at this size. An upload replaces it with its caller's own limit (request_checks.limit_body),
    # after the key, and reads its body itself, streaming each file to storage (upload_form.py).
    app.config["MAX_CONTENT_LENGTH"] = settings.max_upload_bytes + request_checks.MULTIPART_OVERHEAD_BYTES
    app.config.update(
        API_TITLE="PDF ingestion service",
        API_VERSION="v1",
        OPENAPI_VERSION="3.1.0",
        OPENAPI_URL_PREFIX="/",
        OPENAPI_JSON_PATH="openapi.json",
        OPENAPI_SWAGGER_UI_PATH="docs",
        OPENAPI_SWAGGER_UI_URL=swagger_assets.URL,
        API_SPEC_OPTIONS={
            "security": [{"bearer": []}],
            "components": {"securitySchemes": {"bearer": BEARER}},
        },
    )
    # Every request's commit hands the outbox rows it wrote (stage messages, webhook deliveries)
    # to the relay at once.
    relay = Relay.from_settings(db.sessions, publisher, settings)
    relay.attach(db.sessions)
    app.extensions["ingest"] = Services(
        settings, db, make_storage(settings), relay, vectors=vectors, embedder=embedder
    )
    request_checks.install(app)
    api = IngestApi(app, settings)
    for blueprint in (health.blp, documents.blp, jobs.blp, events.blp, webhooks.blp, search.blp, admin.blp):
        api.register_blueprint(blueprint)
    api.register_blueprint(document_content.blp)
    api.register_blueprint(job_timeline.blp)
    api.register_blueprint(whoami.blp)
    app.register_blueprint(swagger_assets.blp)
    app.register_blueprint(console.blp)
    register_error_handlers(app)
    metrics.install(app)
    return app
