"""Engines, sessions and migrations: built per process from settings, owned by the caller."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import DBAPIError, DisconnectionError
from sqlalchemy.orm import Session, sessionmaker

from shared.settings import Settings
from shared.sqlite_turns import TurnTakingConnection, begin_immediate

T = TypeVar("T")
MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# A pooled connection that sat unused this long is pinged before it is handed out (see _ping_idle).
PING_IDLE_S = 5.0
# Connections a process keeps open once it has needed them (QueuePool opens them on demand), and the
# ones it opens beyond that for a burst and closes after use. A gevent gateway process runs a dozen or
# more requests at once: with fewer kept, every burst opened and closed connections, a new server
# process each (at 32 clients, a gateway spent 3.5% of its time connecting for the key lookup).
POOL_KEPT = 20
READ_POOL_KEPT = 10
POOL_OVERFLOW = 10
# How long a SQLite transaction waits for the database's write lock before "database is locked".
SQLITE_TIMEOUT_S = 30.0


def make_engine(url: str, *, ping_every_checkout: bool = True) -> Engine:
    """An engine for `url`. SQLite gets WAL, foreign keys and writer serialisation (BEGIN IMMEDIATE).
    Without `ping_every_checkout`, only a connection idle for PING_IDLE_S is pinged (_ping_idle)."""
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={
                "timeout": SQLITE_TIMEOUT_S,
                "check_same_thread": False,
                "factory": TurnTakingConnection,
            },
        )
        _configure_sqlite(engine)
        return engine
    return _server_engine(
        url, ping_every_checkout=ping_every_checkout, pool_size=POOL_KEPT, max_overflow=POOL_OVERFLOW
    )


def _server_engine(url: str, *, ping_every_checkout: bool, **options: Any) -> Engine:
    if ping_every_checkout:
        return create_engine(url, pool_pre_ping=True, **options)
    engine = create_engine(url, **options)
    _ping_idle(engine)
    return engine


def _ping_idle(engine: Engine) -> None:
    # Pinging every checkout (pool_pre_ping) costs a round trip per transaction. A connection in
    # steady use is known good; one idle for PING_IDLE_S may have been closed by the server (a
    # restart, an idle timeout) and is pinged, and replaced by the pool if dead. A connection used
    # just before a restart fails its next statement instead, which SQLAlchemy reports as a
    # disconnect and answers by replacing every connection of the pool; `Database.reading` then
    # tries once more, so a request's first read does not fail for it.
    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        if time.monotonic() - record.info.get("idle_since", time.monotonic()) < PING_IDLE_S:
            return
        try:
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute("SELECT 1")
            finally:
                cursor.close()
        except engine.dialect.loaded_dbapi.Error as exc:
            raise DisconnectionError() from exc


def _configure_sqlite(engine: Engine) -> None:
    # pysqlite's own transaction handling starts transactions late and cannot upgrade a reader
    # to a writer under contention; take the write lock at BEGIN instead (SQLAlchemy's recipe),
    # waiting for it as shared/sqlite_turns.py does rather than in SQLite's sleeping busy handler.
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        begin_immediate(conn.connection.dbapi_connection, SQLITE_TIMEOUT_S)


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One short transaction: commit on success, roll back on error."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def migrate(url: str) -> None:
    """Bring the database at `url` to the newest schema."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            config = alembic_config(url)
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
            connection.commit()
    finally:
        engine.dispose()


class Database:
    """The engine and session factory of one process."""

    def __init__(self, url: str, *, ping_every_checkout: bool = True) -> None:
        self.url = url
        self.engine = make_engine(url, ping_every_checkout=ping_every_checkout)
        self.sessions = make_session_factory(self.engine)
        # Reads of one statement (the API key of each request) on connections in autocommit mode for
        # good: switching a pooled connection to autocommit and back costs a round trip per read.
        self._reads = (
            None
            if self.is_sqlite
            else _server_engine(
                url,
                ping_every_checkout=ping_every_checkout,
                isolation_level="AUTOCOMMIT",
                pool_size=READ_POOL_KEPT,
                max_overflow=POOL_OVERFLOW,
            )
        )

    @classmethod
    def from_settings(cls, settings: Settings, *, ping_every_checkout: bool = True) -> Database:
        return cls(settings.effective_database_url, ping_every_checkout=ping_every_checkout)

    def transaction(self) -> Any:
        return transaction(self.sessions)

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection for a read of one statement outside any transaction: on PostgreSQL no BEGIN
        and COMMIT round trips around it (SQLite reads in a short transaction, as everything else)."""
        if self.is_sqlite:
            with self.engine.begin() as connection:
                yield connection
            return
        assert self._reads is not None
        with self._reads.connect() as connection:
            yield connection

    def reading(self, read: Callable[[Connection], T]) -> T:
        """`read` on a connection from `read()`; once more on a new connection if the pooled one
        turned out dead (the database restarted since it was last used)."""
        try:
            with self.read() as connection:
                return read(connection)
        except DBAPIError as exc:
            if not exc.connection_invalidated:
                raise
        with self.read() as connection:
            return read(connection)

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"
