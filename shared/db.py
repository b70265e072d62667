"""Engines, sessions and migrations: built per process from settings, owned by the caller."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from shared.errors import DatabaseUnavailableError
from shared.settings import Settings
from shared.sqlite_turns import TurnTakingConnection, begin_immediate

if TYPE_CHECKING:
    from alembic.config import Config

T = TypeVar("T")
MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# Connections a process keeps open once it has needed them (QueuePool opens them on demand), and the
# ones it opens beyond that for a burst and closes after use. A gevent gateway process runs a dozen or
# more requests at once: with fewer kept, every burst opened and closed connections, a new server
# process each (at 32 clients, a gateway spent 3.5% of its time connecting for the key lookup).
POOL_KEPT = 20
READ_POOL_KEPT = 10
POOL_OVERFLOW = 10
# How long a SQLite transaction waits for the database's write lock before "database is locked".
SQLITE_TIMEOUT_S = 30.0
# PostgreSQL's error codes that say the server went away or is not serving yet (admin_shutdown,
# crash_shutdown, cannot_connect_now); class 08 is every "connection exception".
UNAVAILABLE_PGCODES = frozenset({"57P01", "57P02", "57P03"})


def make_engine(url: str) -> Engine:
    """An engine for `url`. SQLite gets WAL, foreign keys and writer serialisation (BEGIN IMMEDIATE);
    a server's pool pings each connection it hands out (_server_engine)."""
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
    return _server_engine(url, pool_size=POOL_KEPT, max_overflow=POOL_OVERFLOW)


def _server_engine(url: str, *, pre_ping: bool = True, **options: Any) -> Engine:
    # pool_pre_ping: a connection the server closed since its last use (a restart, a failover, an
    # idle timeout) is found at checkout and replaced before a statement of the request meets it;
    # the first disconnect found also invalidates the rest of the pool. Its cost is one round trip
    # per checkout, two per upload (the accept transaction, the outbox's; the key lookup's pool does
    # without, see Database). Measured against a local PostgreSQL on a 2-core machine: a
    # one-statement transaction 0.82 -> 1.20 ms, within the noise of a whole upload through the app
    # (20.9 ms without, 21.0 ms with, means of 3 x 150). A connection that dies between its ping
    # and its statements fails its transaction, which `Database.retrying` runs once more from its
    # start.
    return create_engine(url, pool_pre_ping=pre_ping, **options)


def database_unavailable(exc: BaseException) -> bool:
    """Whether `exc` says the database server is out of reach or the connection to it was lost,
    rather than that it refused a statement (a lock timeout, a constraint, bad SQL)."""
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    if not isinstance(exc, OperationalError) or not hasattr(exc.orig, "pgcode"):
        return False  # SQLite's "database is locked" is an OperationalError without a pgcode
    pgcode: str | None = cast(Any, exc.orig).pgcode
    # No code: a failure in the client library itself (connection refused, server closed it).
    return pgcode is None or pgcode.startswith("08") or pgcode in UNAVAILABLE_PGCODES


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
    """One short transaction: commit on success, roll back on error. A lost or refused connection
    is raised as `DatabaseUnavailableError`, saying whether it was lost while the COMMIT was in
    flight (everything else is flushed first, so only the COMMIT itself is ambiguous)."""
    session = factory()
    committing = False
    try:
        yield session
        session.flush()
        committing = True
        session.commit()
    except BaseException as exc:
        session.rollback()
        if database_unavailable(exc):
            raise DatabaseUnavailableError(maybe_committed=committing) from exc
        raise
    finally:
        session.close()


def alembic_config(url: str) -> Config:
    # Imported here: only migrations need alembic, and importing it costs every process that opens a
    # database about 0.5 s of the 5 s its imports take on a 2-core machine (python -X importtime).
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def migrate(url: str) -> None:
    """Bring the database at `url` to the newest schema."""
    from alembic import command

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

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.sessions = make_session_factory(self.engine)
        # Reads of one statement (the API key of each request) on connections in autocommit mode for
        # good: switching a pooled connection to autocommit and back costs a round trip per read.
        # No ping at checkout: every read goes through `reading`, which runs it once more on a new
        # connection when the pooled one was lost (the loss invalidates the rest of the pool too).
        # The ping was 3.1% of a gateway worker's time under the peer bench's uploads at 8 clients
        # (py-spy, 2 cores), the key lookup's share of the pings.
        self._reads = (
            None
            if self.is_sqlite
            else _server_engine(
                url,
                pre_ping=False,
                isolation_level="AUTOCOMMIT",
                pool_size=READ_POOL_KEPT,
                max_overflow=POOL_OVERFLOW,
            )
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> Database:
        return cls(settings.effective_database_url)

    def transaction(self) -> Any:
        return transaction(self.sessions)

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection for a read of one statement outside any transaction: on PostgreSQL no BEGIN
        and COMMIT round trips around it (SQLite reads in a short transaction, as everything else).
        Its pool does not ping: read through `reading`, which replaces a lost connection."""
        if self.is_sqlite:
            with self.engine.begin() as connection:
                yield connection
            return
        assert self._reads is not None
        try:
            with self._reads.connect() as connection:
                yield connection
        except DBAPIError as exc:
            if database_unavailable(exc):
                raise DatabaseUnavailableError() from exc
            raise

    def reading(self, read: Callable[[Connection], T]) -> T:
        """`read` on a connection from `read()`, retried as `retrying` does."""

        def once() -> T:
            with self.read() as connection:
                return read(connection)

        return self.retrying(once)

    @staticmethod
    def retrying(work: Callable[[], T]) -> T:
        """`work` (one or more whole transactions or reads); once more from its start if the
        connection was lost before anything of it could have committed: the server restarted or
        failed over since the pool handed the connection out. The one place a database operation
        is tried again: a second loss, or a loss during a COMMIT, is the caller's 503."""
        try:
            return work()
        except DatabaseUnavailableError as exc:
            lost = isinstance(exc.__cause__, DBAPIError) and exc.__cause__.connection_invalidated
            if exc.maybe_committed or not lost:
                raise
        return work()

    def dispose(self) -> None:
        """Closes the idle connections of both pools (they reopen on the next use)."""
        self.engine.dispose()
        if self._reads is not None:
            self._reads.dispose()

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"
