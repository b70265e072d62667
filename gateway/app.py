"""The Flask app factory: settings in, a configured gateway out."""

from __future__ import annotations

from flask import Flask

from gateway.api import documents, health, jobs, search
from gateway.errors import register_error_handlers
from gateway.services import Services
from shared.db import Database
from shared.embeddings import Embedder
from shared.outbox import Relay
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from shared.storage import make_storage
from shared.vectorstore import VectorStore

# Multipart framing around the file: the request may exceed the file limit by this much.
MULTIPART_OVERHEAD_BYTES = 64 * 1024


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
    db = db or Database.from_settings(settings)
    publisher = publisher or Publisher(make_broker(settings))
    app = Flask(__name__)
    # Werkzeug refuses a larger body with 413 before it is read, and stops reading a chunked
    # body at this size; file parts beyond 500 KB are spooled to disk, never held in memory.
    app.config["MAX_CONTENT_LENGTH"] = settings.max_upload_bytes + MULTIPART_OVERHEAD_BYTES
    app.extensions["ingest"] = Services(
        settings,
        db,
        make_storage(settings),
        Relay(db.sessions, publisher),
        vectors=vectors,
        embedder=embedder,
    )
    register_error_handlers(app)
    for blueprint in (health.bp, documents.bp, jobs.bp, search.bp):
        app.register_blueprint(blueprint)
    return app
