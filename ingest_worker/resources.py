"""The per-process clients a worker uses (database, storage, embedder, vector store), built lazily.

Built on first use, so a forked worker process builds its own after the fork. The embedded
process configures one `Resources` shared by the gateway and the worker threads.
"""

from __future__ import annotations

import threading
from functools import cached_property

from shared.db import Database
from shared.embedders import Embedder, Embedders, make_embedder
from shared.settings import Settings
from shared.storage import ObjectStorage, make_storage
from shared.vectorstores import VectorStore, open_vector_store


class Resources:
    """Lazily built clients for one process; thread-safe to build."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.RLock()

    @cached_property
    def db(self) -> Database:
        with self._lock:
            return Database.from_settings(self.settings)

    @cached_property
    def storage(self) -> ObjectStorage:
        with self._lock:
            return make_storage(self.settings)

    @cached_property
    def embedder(self) -> Embedder:
        """The service's default embedder."""
        with self._lock:
            return make_embedder(self.settings)

    @cached_property
    def embedders(self) -> Embedders:
        with self._lock:
            return Embedders(self.settings, self.embedder)

    def embedder_for(self, model: str | None, dimension: int | None) -> Embedder:
        """The embedder a job records (its tenant's active model, or a reindex's target); the
        default one when it records none."""
        if model is None:
            return self.embedder
        return self.embedders.get(model, dimension)

    @cached_property
    def vectors(self) -> VectorStore:
        with self._lock:
            return open_vector_store(self.settings)


_current: Resources | None = None


def configure(resources: Resources) -> None:
    """Use these resources in this process (the embedded process, tests)."""
    global _current
    _current = resources


def current(settings: Settings) -> Resources:
    """This process's resources, built from `settings` on first use."""
    global _current
    if _current is None:
        _current = Resources(settings)
    return _current
