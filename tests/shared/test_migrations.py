"""The Alembic migrations build exactly the schema the models describe, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from shared.db import Database
from shared.models import Base


def schema_differences(db: Database) -> list[Any]:
    with db.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))


@pytest.mark.parametrize("which", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_the_migrated_schema_matches_the_models(which: str, request: pytest.FixtureRequest) -> None:
    # Given a database migrated to the newest revision
    db: Database = request.getfixturevalue("sqlite_db" if which == "sqlite" else "pg_db")

    # When Alembic compares it with the models
    differences = schema_differences(db)

    # Then there is nothing a new migration would have to add, drop or change
    assert differences == []
