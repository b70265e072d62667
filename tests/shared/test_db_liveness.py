"""A connection the server closed since its last use is replaced unseen: the transactions' engine pings
each connection it hands out, and a read of the key lookup's pool (which does not ping) is run once
more on a new connection. A transaction whose connection dies later is run once more from its start,
unless its COMMIT was in flight, and a database out of reach is `DatabaseUnavailableError`."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from sqlalchemy import Connection, event, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from shared.db import Database, database_unavailable
from shared.errors import DatabaseUnavailableError


@pytest.fixture
def gateway_db(pg_server_url: str) -> Iterator[Database]:
    db = Database(pg_server_url)
    yield db
    db.dispose()


def _backend_pid(connection: Connection | Session) -> int:
    return int(connection.execute(text("SELECT pg_backend_pid()")).scalar_one())


def _terminate(db: Database, pid: int) -> None:
    """What a server restart does to one connection."""
    with db.read() as connection:
        connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})


def test_a_read_on_a_connection_closed_by_the_server_gets_a_new_one(
    gateway_db: Database, pg_db: Database
) -> None:
    # Given a pooled connection, used just now, that the server then closes (as a restart would)
    first = gateway_db.reading(_backend_pid)
    _terminate(pg_db, first)

    # When the next request reads through that pool
    second = gateway_db.reading(_backend_pid)

    # Then it gets its answer from a new connection, and the next transaction works too
    assert second != first
    with gateway_db.transaction() as session:
        assert session.execute(text("SELECT 1")).scalar_one() == 1


def test_a_transaction_whose_connection_dies_before_its_commit_runs_once_more(
    gateway_db: Database, pg_db: Database
) -> None:
    # Given a transaction whose connection the server closes after its first statement
    attempts: list[int] = []

    def work() -> int:
        with gateway_db.transaction() as session:
            pid = _backend_pid(session)
            attempts.append(pid)
            if len(attempts) == 1:
                _terminate(pg_db, pid)
            return int(session.execute(text("SELECT 41 + 1")).scalar_one())

    # When it runs through `retrying`
    answer = gateway_db.retrying(work)

    # Then it ran once more from its start, on a new connection, and answered
    assert answer == 42
    assert len(attempts) == 2 and attempts[0] != attempts[1]


def test_a_connection_lost_twice_is_database_unavailable(gateway_db: Database, pg_db: Database) -> None:
    # Given a transaction whose connection dies on every try
    attempts: list[int] = []

    def work() -> None:
        with gateway_db.transaction() as session:
            attempts.append(_backend_pid(session))
            _terminate(pg_db, attempts[-1])
            session.execute(text("SELECT 1"))

    # When it runs through `retrying`, Then the second loss is the caller's, after two tries
    with pytest.raises(DatabaseUnavailableError) as raised:
        gateway_db.retrying(work)
    assert len(attempts) == 2
    assert raised.value.code == "database_unavailable" and not raised.value.maybe_committed


def test_a_connection_lost_during_the_commit_is_not_tried_again(
    gateway_db: Database, pg_db: Database
) -> None:
    # Given a transaction whose connection dies as its COMMIT is sent (it may have committed)
    attempts: list[int] = []

    def work() -> None:
        with gateway_db.transaction() as session:
            pid = _backend_pid(session)
            attempts.append(pid)
            event.listen(session, "before_commit", lambda _session: _terminate(pg_db, pid))

    # When it runs through `retrying`, Then it is not run again: the error says it may have committed
    with pytest.raises(DatabaseUnavailableError) as raised:
        gateway_db.retrying(work)
    assert len(attempts) == 1
    assert raised.value.maybe_committed


def test_a_read_error_that_is_not_a_lost_connection_is_raised(gateway_db: Database) -> None:
    # Given a read that fails in the database itself
    # When it is run, Then the error reaches the caller as it is (no second try)
    with pytest.raises(Exception, match="division by zero"):
        gateway_db.reading(lambda connection: connection.execute(text("SELECT 1 / 0")).scalar())


def test_a_database_that_refuses_a_statement_is_not_unavailable() -> None:
    # Given SQLite's lock timeout, an OperationalError that is not a lost server
    locked = OperationalError("BEGIN IMMEDIATE", {}, sqlite3.OperationalError("database is locked"))
    # Then it is not taken for an unavailable database
    assert not database_unavailable(locked)
