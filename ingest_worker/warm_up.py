"""Opens the vector store in the background as a worker starts, so that its first index job finds it open.

The store's collections open on first use; on the embedded engine that is a shard load (tens of ms)
or, for a collection not made yet, its creation with its payload indexes (hundreds of ms), paid by
whichever job comes first. A daemon thread does both at start instead; a failure is logged and leaves
the lazy path as it was.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from dramatiq.broker import Broker
from dramatiq.middleware import Middleware

from ingest_worker.resources import Resources
from shared.embedders import model_spec
from shared.queue import BACKLOG_SUFFIX, QUEUE_BULK_INDEX, QUEUE_INDEX

logger = logging.getLogger(__name__)

# The queues whose stages use the vector store: with a local folder only their pool may open it.
VECTOR_QUEUES = frozenset({QUEUE_INDEX, QUEUE_INDEX + BACKLOG_SUFFIX, QUEUE_BULK_INDEX})


def warm_vectors(resources: Resources) -> bool:
    """Open the store, each collection it holds and the default model's (made when missing, as the
    first job would make it). Never raises: whatever this leaves unopened opens on first use."""
    began = time.monotonic()
    try:
        store = resources.vectors
        opened = store.open_collections()
        model, dimension = model_spec(resources.settings)
        store.ensure_collection(store.collection(model, dimension), dimension)
    except Exception:
        logger.warning("vector store not opened ahead of the first job; it opens on first use", exc_info=True)
        return False
    logger.info("vector store opened in %.2fs (%s collection(s))", time.monotonic() - began, len(opened))
    return True


def start_warm_up(resources: Resources) -> threading.Thread:
    """`warm_vectors` on a daemon thread, so start-up does not wait for it."""
    thread = threading.Thread(target=warm_vectors, args=(resources,), name="vector-warm-up", daemon=True)
    thread.start()
    return thread


class VectorWarmUp(Middleware):
    """In a worker process that serves an index queue, open the vector store as the worker boots."""

    def __init__(self, resources: Callable[[], Resources]) -> None:
        self.resources = resources

    def after_worker_boot(self, broker: Broker, worker: Any) -> None:
        queues = worker.consumer_whitelist
        if queues is None or VECTOR_QUEUES & set(queues):
            start_warm_up(self.resources())
