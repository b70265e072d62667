"""The gateway's clients (database, storage, outbox relay, search), built once per app."""

from __future__ import annotations

import threading
from functools import cached_property

from flask import current_app

from shared.db import Database
from shared.embedders import Embedder, Embedders
from shared.errors import SearchUnavailableError
from shared.outbox import Relay
from shared.settings import Settings
from shared.storage import ObjectStorage
from shared.vectorstores import VectorStore, open_vector_store


class Services:
    """What the views use. Search clients are built on first search, or injected by the embedded
    process, which shares its own with the worker threads."""

    def __init__(
        self,
        settings: Settings,
        db: Database,
        storage: ObjectStorage,
        relay: Relay,
        *,
        vectors: VectorStore | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.settings = settings
        self.db = db
        self.storage = storage
        self.relay = relay
        self._vectors = vectors
        self._embedder = embedder
        self._lock = threading.Lock()

    @cached_property
    def vectors(self) -> VectorStore:
        if self._vectors is not None:
            return self._vectors
        if self.settings.local_qdrant:
            # The local Qdrant folder belongs to the index worker in the split topology.
            raise SearchUnavailableError()
        with self._lock:
            return open_vector_store(self.settings)

    @cached_property
    def embedders(self) -> Embedders:
        return Embedders(self.settings, self._embedder)

    @property
    def embedder(self) -> Embedder:
        return self.embedders.default


def services() -> Services:
    return current_app.extensions["ingest"]  # type: ignore[no-any-return]
