"""Each test gives back the server connections it opened, so that a long run never takes every one of
PostgreSQL's connections (100 by default)."""

from __future__ import annotations

import weakref
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine


@pytest.fixture(autouse=True)
def closes_server_connections() -> Iterator[None]:
    """Each server engine a test connected with closes its idle connections when the test ends. A
    test's app is freed only by a later garbage collection, and until then its pools keep their
    connections: the gateway tests alone held 75 of PostgreSQL's 100 (28 since), and a later test got
    "too many clients". (SQLite engines are left alone: an in-memory database lives in its pool.)"""
    engines: weakref.WeakSet[Engine] = weakref.WeakSet()

    def connected(connection: sa.Connection) -> None:
        engines.add(connection.engine)

    sa.event.listen(Engine, "engine_connect", connected)
    yield
    sa.event.remove(Engine, "engine_connect", connected)
    for engine in list(engines):
        if engine.dialect.name != "sqlite":
            engine.dispose()
