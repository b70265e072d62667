"""A long-running process's start-up heap, kept out of Python's full collections.

A full (generation 2) collection walks every tracked object while holding the GIL. Once a process of
this service has imported its libraries (SQLAlchemy, Flask, Dramatiq, pypdf, the Qdrant client:
about 240,000 objects), one such collection takes 100-150 ms on a 2-core machine and stalls every
thread of the process meanwhile: a request, a stage's transaction, a webhook on its way. Those
objects live as long as the process, so at the end of its start-up they move to the permanent
generation (`gc.freeze`), and a full collection walks only what was made since.
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Collect what start-up left as garbage, then exempt every object still alive from later
    collections. Call once a process has started and before it serves."""
    gc.collect()
    gc.freeze()
