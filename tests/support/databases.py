"""Fresh SQLite databases for tests: the migrations run once per test run into a template file, and each
new database starts as a copy of it (a copy and a no-op upgrade cost a tenth of the migrations)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
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
