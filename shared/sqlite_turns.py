"""Writers of a SQLite database take turns without sleeping past the end of the holder's transaction.

Every transaction on SQLite begins with BEGIN IMMEDIATE, which takes the database's write lock.
SQLite's own busy handler waits for a held lock by sleeping in growing steps (1, 2, 5, 10 … 100 ms),
so a writer may sleep on long after the lock was freed: on an idle system, a webhook waited up to
a quarter of a second after its event committed, its relay and its sender queued behind a worker's
short transactions that way. Here BEGIN IMMEDIATE does not wait inside SQLite (a busy timeout of 0
for that one statement): a writer that finds the lock taken waits until a connection of this
process commits or rolls back, and tries again at once. A writer in another process (a migration, a
second process on the same file) ends its transaction without telling this one; the waiter then
tries again every POLL_S. The overall wait is bounded as before, by the connection's timeout.
"""

from __future__ import annotations

import sqlite3
import threading
import time

# A waiter tries again this often when nothing in this process tells it the lock was freed.
POLL_S = 0.005


class _Turns:
    """How many transactions of this process ended, and a condition to wait for the next one."""

    def __init__(self) -> None:
        self.ended = 0
        self.changed = threading.Condition()

    def end(self) -> None:
        with self.changed:
            self.ended += 1
            self.changed.notify_all()

    def wait_after(self, seen: int) -> None:
        """Return when a transaction ended after `seen` was read, or after POLL_S."""
        with self.changed:
            if self.ended == seen:
                self.changed.wait(POLL_S)


_TURNS = _Turns()


class TurnTakingConnection(sqlite3.Connection):
    """A sqlite3 connection (passed as `factory`) that tells waiting writers when its transaction ends."""

    def commit(self) -> None:
        try:
            super().commit()
        finally:
            _TURNS.end()

    def rollback(self) -> None:
        try:
            super().rollback()
        finally:
            _TURNS.end()

    def close(self) -> None:
        try:
            super().close()
        finally:
            _TURNS.end()


def begin_immediate(connection: sqlite3.Connection, timeout_s: float) -> None:
    """BEGIN IMMEDIATE on `connection`, waiting up to `timeout_s` for the write lock (then SQLite's
    "database is locked" error, as with its own busy handler)."""
    deadline = time.monotonic() + timeout_s
    connection.execute("PRAGMA busy_timeout=0")
    try:
        while True:
            seen = _TURNS.ended
            try:
                connection.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_BUSY:
                    raise
                if time.monotonic() >= deadline:
                    raise
            _TURNS.wait_after(seen)
    finally:
        connection.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
