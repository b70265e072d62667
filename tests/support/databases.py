"""Fresh databases for tests: SQLite files, for which the migrations run once per test run into a template
file that each new database starts as a copy of (a copy and a no-op upgrade cost a tenth of the
migrations); and private PostgreSQL databases, dropped afterwards."""

from __future__ import annotations

import atexit
import secrets
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

from shared.db import migrate

_lock = threading.Lock()
_template: Path | None = None


def _template_file() -> Path:
    global _template
    with _lock:
        if _template is None:
            folder = Path(tempfile.mkdtemp(prefix="ingest-schema-"))
            atexit.register(shutil.rmtree, folder, True)
            migrate(f"sqlite:///{folder / 'template.db'}")
            _template = folder / "template.db"
        return _template


def migrate_database(url: str) -> None:
    """Bring the database at `url` to the newest schema, as `shared.db.migrate` does; a SQLite file that
    does not exist yet starts as a copy of the run's migrated template."""
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
        target = Path(parsed.database)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(_template_file(), target)
    # On a copy this is a no-op; it still runs, so that a database can never miss a migration.
    migrate(url)


@contextmanager
def private_postgres(server_url: str) -> Iterator[str]:
    """A fresh database on the PostgreSQL server at `server_url`, dropped afterwards."""
    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    name = f"ingest_fuzz_{secrets.token_hex(4)}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield sa.engine.make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def fuzz_database(kind: str, server_url: str) -> Iterator[str]:
    """The embedded SQLite file (""), or a private database on the PostgreSQL server at `server_url`."""
    if kind == "sqlite":
        yield ""
    elif kind == "postgres":
        with private_postgres(server_url) as url:
            yield url
    else:
        raise SystemExit(f"unknown database kind {kind!r}: sqlite or postgres")
