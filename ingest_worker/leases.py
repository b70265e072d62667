"""A lease kept alive by a thread of its own while the work it covers runs."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def renewed(renew: Callable[[], bool], *, every_s: float, what: str) -> Iterator[None]:
    """Call `renew` every `every_s` seconds until the block ends or `renew` returns False (the lease
    was taken over or let go). A failed renewal is logged and tried again at the next tick: the
    lease only lapses, and the maintenance loop only resumes the work, when renewals keep failing."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every_s):
            try:
                if not renew():
                    return
            except Exception:
                logger.warning("could not renew the lease of %s", what, exc_info=True)

    thread = threading.Thread(target=loop, name=f"lease {what}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
