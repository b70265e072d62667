"""Shared fixtures: settings for the embedded topology, and the real servers of the production one.

Both kinds of settings embed with the deterministic fake (tests/shared/embedders/fakes.py), which counts
tokens as the offline model does: tests about embedding and retrieval ask for `embedder="local"` themselves.

PostgreSQL and Redis are the machine's servers (INGEST_TEST_DATABASE_URL, INGEST_TEST_REDIS_URL).
When one is missing its tests skip with a loud reason on a laptop and fail under CI=true, so CI
can never go green without them. The S3 server is started by the suite itself.
"""

from __future__ import annotations

import os
import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import sqlalchemy as sa

from shared.db import Database, migrate
from shared.models import Base
from shared.settings import Settings
from tests.shared.embedders.fakes import FAKE_EMBEDDER
from tests.support.databases import migrate_database

# Markers from the servers a test uses, the spreading of tests over xdist workers, and the closing of
# each test's server connections.
pytest_plugins = ["tests.support.markers", "tests.support.distribution", "tests.support.server_connections"]

ROOT = Path(__file__).resolve().parent.parent
TEST_DATABASE_URL = os.environ.get(
    "INGEST_TEST_DATABASE_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/test"
)
TEST_REDIS_URL = os.environ.get("INGEST_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
MODEL_CACHE_DIR = os.environ.get("INGEST_MODEL_CACHE_DIR", str(ROOT / "var" / "models"))


def missing_service(what: str) -> None:
    """Skip loudly on a developer's machine; fail in CI, where the service must be there."""
    message = f"{what} is not reachable: these tests need it"
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(message + " (CI=true, so this is a failure, not a skip)", pytrace=False)
    pytest.skip(message)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Embedded-topology settings in a fresh data directory, embedding with the fake."""
    return Settings(
        data_dir=str(tmp_path / "data"),
        model_cache_dir=MODEL_CACHE_DIR,
        worker_threads=2,
        embedder=FAKE_EMBEDDER,
    )


@pytest.fixture
def sqlite_db(settings: Settings) -> Database:
    migrate_database(settings.effective_database_url)
    return Database.from_settings(settings)


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """A private database on the PostgreSQL server, migrated, dropped at the end of the run."""
    admin = sa.create_engine(TEST_DATABASE_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.OperationalError:
        admin.dispose()
        missing_service(f"PostgreSQL at {TEST_DATABASE_URL}")
    name = f"ingest_test_{secrets.token_hex(4)}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.engine.make_url(TEST_DATABASE_URL).set(database=name).render_as_string(hide_password=False)
    migrate(url)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def pg_db(pg_server_url: str) -> Iterator[Database]:
    """The private PostgreSQL database, emptied before each test."""
    db = Database(pg_server_url)
    with db.engine.begin() as conn:
        tables = ", ".join(t.name for t in reversed(Base.metadata.sorted_tables))
        conn.execute(sa.text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    yield db
    db.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def any_db(request: pytest.FixtureRequest) -> Database:
    """Both databases the service supports: the behaviour must not depend on which."""
    if request.param == "sqlite":
        return request.getfixturevalue("sqlite_db")  # type: ignore[no-any-return]
    return request.getfixturevalue("pg_db")  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def redis_url() -> str:
    client = redis.Redis.from_url(TEST_REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError:
        missing_service(f"Redis at {TEST_REDIS_URL}")
    finally:
        client.close()
    return TEST_REDIS_URL


@pytest.fixture
def broker_namespace(redis_url: str) -> Iterator[str]:
    """A private Dramatiq namespace on the shared Redis, removed afterwards."""
    namespace = f"ingest-test-{uuid.uuid4().hex[:8]}"
    yield namespace
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(f"{namespace}*"))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A private SeaweedFS S3 server with authentication on, for the whole run."""
    from tests.support.s3_server import running_s3_server

    with running_s3_server(tmp_path_factory.mktemp("weed")) as info:
        yield info


@pytest.fixture(scope="session")
def rabbitmq_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A private RabbitMQ node (its own name, ports and files) for the whole run, stopped at the end."""
    from tests.support.rabbitmq_server import running_rabbitmq, server_script

    if server_script() is None:
        missing_service("the rabbitmq-server package (make test-debs installs it)")
    with running_rabbitmq(tmp_path_factory.mktemp("rabbitmq")) as node:
        yield node


@pytest.fixture
def rabbitmq_url(rabbitmq_node: Any) -> Iterator[str]:
    """The private node's URL; the contract's queues are deleted after each test."""
    from shared.queue import QUEUES

    yield rabbitmq_node.url
    if rabbitmq_node.process is not None:
        rabbitmq_node.delete_queues(set(QUEUES))


@pytest.fixture(params=["redis", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)])
def broker_fields(request: pytest.FixtureRequest, redis_url: str, broker_namespace: str) -> dict[str, str]:
    """Settings fields for each real broker: Redis, then RabbitMQ with the tenant slots in Redis."""
    fields = {"broker_namespace": broker_namespace}
    if request.param == "redis":
        return {**fields, "broker_url": redis_url}
    url = request.getfixturevalue("rabbitmq_url")
    return {**fields, "broker_url": url, "tenant_slots_redis_url": redis_url}


# --- The gateway on the embedded defaults, with the in-process broker and no worker -----------


@pytest.fixture
def production_settings(
    tmp_path: Path, pg_server_url: str, pg_db: Database, redis_url: str, broker_namespace: str, s3_server: Any
) -> Settings:
    """The production topology's parts: this run's PostgreSQL database (emptied), a Redis namespace of
    this test's own and the S3 server, and the fake embedder; tests add what their processes need with
    `.replace`."""
    return Settings(
        embedder=FAKE_EMBEDDER,
        data_dir=str(tmp_path / "data"),
        database_url=pg_server_url,
        broker_url=redis_url,
        broker_namespace=broker_namespace,
        storage_backend="s3",
        s3_endpoint_url=s3_server.endpoint_url,
        s3_bucket=s3_server.bucket,
        s3_access_key_id=s3_server.access_key_id,
        s3_secret_access_key=s3_server.secret_access_key,
        model_cache_dir=MODEL_CACHE_DIR,
    )


@pytest.fixture
def app(settings: Settings) -> Any:
    """A gateway whose jobs stay queued (no worker consumes them)."""
    from gateway.app import create_app
    from shared.queue import Publisher, make_broker

    settings = settings.replace(max_upload_mb=1)
    migrate_database(settings.effective_database_url)
    return create_app(settings, publisher=Publisher(make_broker(settings)))


@pytest.fixture
def client(app: Any) -> Any:
    return app.test_client()


def tenant_key(app: Any, name: str) -> str:
    """Create a tenant and return its API key."""
    from shared.tenants import create_tenant

    with app.extensions["ingest"].db.transaction() as session:
        return create_tenant(session, name)[1]


def admin_key(app: Any) -> str:
    from shared.models import KeyRole
    from shared.tenants import new_api_key

    with app.extensions["ingest"].db.transaction() as session:
        return new_api_key(session, None, KeyRole.ADMIN)


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[str]:
    """A Redis server of this test's own, on a free port, for tests that flush or restart it."""
    import shutil
    import socket
    import subprocess
    import time

    binary = shutil.which("redis-server")
    if binary is None:
        missing_service("the redis-server binary")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.RedisError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.05)
    try:
        yield url
    finally:
        client.close()
        proc.terminate()
        proc.wait(timeout=10)
