"""`make up` gives each checkout its own database and Redis namespace, unless settings name them."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from deploy.up import up_settings


def test_two_checkouts_on_one_host_get_their_own_database_and_namespace(tmp_path: Path) -> None:
    # Given two checkouts of the service on one host, and no INGEST_* variables
    first, second = tmp_path / "one", tmp_path / "two"
    # When each derives its make-up settings
    a, b = up_settings({}, first), up_settings({}, second)
    # Then their databases and Redis namespaces differ, and each is stable for its checkout
    db_a, db_b = (sa.engine.make_url(s.database_url).database for s in (a, b))
    assert db_a != db_b and a.broker_namespace != b.broker_namespace
    assert up_settings({}, first) == a
    assert db_a == a.broker_namespace and db_a.startswith("ingest_")


def test_settings_name_the_database_and_namespace_when_given(tmp_path: Path) -> None:
    # Given an operator who names a database and a namespace
    env = {
        "INGEST_DATABASE_URL": "postgresql+psycopg2://postgres@127.0.0.1:5432/ingest",
        "INGEST_BROKER_NAMESPACE": "ingest",
    }
    # When make up derives its settings, Then it uses them
    settings = up_settings(env, tmp_path)
    assert (sa.engine.make_url(settings.database_url).database, settings.broker_namespace) == (
        "ingest",
        "ingest",
    )
