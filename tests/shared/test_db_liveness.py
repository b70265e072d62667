"""The gateway's engine pings only idle connections: a connection the server closed since its last use
is replaced without failing the read that finds it dead."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Connection, text

from shared.db import Database


@pytest.fixture
def gateway_db(pg_server_url: str) -> Iterator[Database]:
    db = Database(pg_server_url, ping_every_checkout=False)
    yield db
    db.engine.dispose()


def _backend_pid(connection: Connection) -> int:
    return int(connection.execute(text("SELECT pg_backend_pid()")).scalar_one())


def test_a_read_on_a_connection_closed_by_the_server_is_tried_again_on_a_new_one(
    gateway_db: Database, pg_db: Database
) -> None:
    # Given a pooled connection, used just now, that the server then closes (as a restart would)
    first = gateway_db.reading(_backend_pid)
    with pg_db.read() as connection:
        connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": first})

    # When the next request reads through that pool
    second = gateway_db.reading(_backend_pid)

    # Then it gets its answer from a new connection, and the next transaction works too
    assert second != first
    with gateway_db.transaction() as session:
        assert session.execute(text("SELECT 1")).scalar_one() == 1


def test_a_read_error_that_is_not_a_lost_connection_is_raised(gateway_db: Database) -> None:
    # Given a read that fails in the database itself
    # When it is run, Then the error reaches the caller (no second try)
    with pytest.raises(Exception, match="division by zero"):
        gateway_db.reading(lambda connection: connection.execute(text("SELECT 1 / 0")).scalar())
