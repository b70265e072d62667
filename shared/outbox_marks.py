"""The relay's marks on the rows it published, in batches.

A published stage row is marked (`published_at`, and its job's hand-off or waiting field), so that the
sweep does not publish it again once its claim runs out. The relay does not open a transaction per
row for it: whoever adds a mark while no other mark is under way marks every row added so far in one
transaction, then again for those added meanwhile, until none is left. Under load the marks of many
uploads share one transaction; on an idle system each row is marked at once.

Where the fast path runs in a task of its own (the gateway's greenlets, `outbox.publish_in_background`)
the first mark of a batch also waits `linger_s` before it starts, so the rows published meanwhile
share its transaction at any load: an upload then costs a fraction of a mark transaction, not a
whole one (BEGIN, two UPDATEs and a COMMIT that waits for the disk). The rows' claims last far
longer than the linger, so the sweep never takes a row waiting for its mark.

A mark lost on the way (the process dies, the database is away) leaves its row claimed and
unmarked: when the claim runs out the sweep publishes it again, a duplicate that the idempotent
consumers absorb, as for any other failure between a publish and its mark.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol

from sqlalchemy.orm import Session, sessionmaker

from shared.db import transaction

logger = logging.getLogger(__name__)

# Where the fast path runs in tasks of its own, how long the first mark of a batch waits for more
# rows (well inside a claim's `CLAIM_S`).
LINGER_S = 0.25


class MarkedKind(Protocol):
    """A row kind whose published rows are marked (`RowKind` in shared/outbox.py)."""

    name: str

    def sent(self, session: Session, items: Sequence[tuple[int, Any]]) -> None: ...


class SentMarks:
    """Published rows waiting for their mark; `add` marks them, batched with every other row waiting."""

    def __init__(self, sessions: sessionmaker[Session], *, linger_s: float = 0.0) -> None:
        self.sessions = sessions
        # How long the first mark of a batch waits for more rows (0: marks at once).
        self.linger_s = linger_s
        self._lock = threading.Lock()
        self._waiting: list[tuple[MarkedKind, int, Any]] = []
        self._marking = False

    def add(self, kind: MarkedKind, row_id: int, claim: Any) -> None:
        """Mark this published row: now, with the others waiting, unless a mark under way will take it."""
        with self._lock:
            self._waiting.append((kind, row_id, claim))
            if self._marking:
                return
            self._marking = True
        try:
            if self.linger_s > 0:
                time.sleep(self.linger_s)  # the caller runs in a task of its own (see the docstring)
            while True:
                with self._lock:
                    batch, self._waiting = self._waiting, []
                    if not batch:
                        self._marking = False
                        return
                self._mark(batch)
        except BaseException:
            with self._lock:
                self._marking = False
            raise

    def _mark(self, batch: list[tuple[MarkedKind, int, Any]]) -> None:
        kinds: dict[str, tuple[MarkedKind, list[tuple[int, Any]]]] = {}
        for kind, row_id, claim in batch:
            kinds.setdefault(kind.name, (kind, []))[1].append((row_id, claim))
        try:
            with transaction(self.sessions) as session:
                for kind, items in kinds.values():
                    kind.sent(session, items)
        except Exception:
            logger.exception(
                "published outbox rows %s not marked: the sweep publishes them again after their claim",
                [row_id for _, row_id, _ in batch],
            )
