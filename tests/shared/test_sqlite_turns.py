"""Writers of a SQLite database take turns (shared/sqlite_turns.py): a waiter begins as soon as the
holder's transaction ends, a holder outside this process's connections is waited for by polling,
and a lock never freed ends in SQLite's own "database is locked" after the timeout."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from shared.sqlite_turns import TurnTakingConnection, begin_immediate


def connect(path: Path, *, plain: bool = False) -> sqlite3.Connection:
    factory = sqlite3.Connection if plain else TurnTakingConnection
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False, factory=factory)
    conn.execute("PRAGMA journal_mode=WAL")
    return conn


def waiter(path: Path, timeout_s: float, log: list[str]) -> threading.Thread:
    def run() -> None:
        conn = connect(path)
        try:
            begin_immediate(conn, timeout_s)
            log.append("began")
            conn.execute("INSERT INTO t VALUES ('waiter')")
            conn.commit()
        except sqlite3.OperationalError as exc:
            log.append(str(exc))
        finally:
            conn.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.mark.parametrize("plain_holder", [False, True], ids=["this process's connection", "a foreign one"])
def test_a_waiting_writer_begins_once_the_holder_commits(tmp_path: Path, plain_holder: bool) -> None:
    # Given a database whose write lock a transaction holds
    path = tmp_path / "db.sqlite"
    holder = connect(path, plain=plain_holder)
    holder.execute("CREATE TABLE t (who TEXT)")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t VALUES ('holder')")
    # When another writer asks for the lock, it waits
    log: list[str] = []
    thread = waiter(path, 30, log)
    time.sleep(0.2)
    assert log == []
    # Then, once the holder commits, it begins and writes after the holder
    holder.commit()
    thread.join(timeout=10)
    assert log == ["began"]
    assert [row[0] for row in holder.execute("SELECT who FROM t ORDER BY rowid")] == ["holder", "waiter"]
    # And the waiter's connection keeps its busy timeout for what follows
    check = connect(path)
    begin_immediate(check, 12.5)
    assert check.execute("PRAGMA busy_timeout").fetchone()[0] == 12500
    check.rollback()


def test_a_lock_never_freed_ends_in_database_is_locked_after_the_timeout(tmp_path: Path) -> None:
    # Given a transaction that holds the write lock and never ends
    path = tmp_path / "db.sqlite"
    holder = connect(path)
    holder.execute("CREATE TABLE t (who TEXT)")
    holder.execute("BEGIN IMMEDIATE")
    # When a writer waits for it with a timeout of 0.3 s
    log: list[str] = []
    started = time.monotonic()
    waiter(path, 0.3, log).join(timeout=10)
    # Then it gives up with SQLite's own error, not before its timeout
    assert log == ["database is locked"]
    assert time.monotonic() - started >= 0.3
    holder.rollback()


def test_a_statement_error_at_begin_is_not_retried(tmp_path: Path) -> None:
    # Given a connection already inside a transaction
    conn = connect(tmp_path / "db.sqlite")
    conn.execute("BEGIN")
    # When it is asked to begin again, SQLite's error surfaces at once
    with pytest.raises(sqlite3.OperationalError, match="within a transaction"):
        begin_immediate(conn, 30)
