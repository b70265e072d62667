"""Property-based API test: requests generated from the served OpenAPI document never get a 5xx, and
every response matches the schema the document gives for it."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from qdrant_client import QdrantClient
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from gateway.app import create_app
from shared.embedders import make_embedder
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from shared.vectorstore import VectorStore
from tests.conftest import MODEL_CACHE_DIR, admin_key, auth, tenant_key
from tests.databases import migrate_database
from tests.fakes import FAKE_EMBEDDER

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture
def api_schema(tmp_path: Any) -> Any:
    app_settings = Settings(
        data_dir=str(tmp_path / "data"),
        max_upload_mb=1,
        model_cache_dir=MODEL_CACHE_DIR,
        embedder=FAKE_EMBEDDER,
    )
    migrate_database(app_settings.effective_database_url)
    # As in the embedded process, search gets the vector store and embedder it would share.
    app = create_app(
        app_settings,
        publisher=Publisher(make_broker(app_settings)),
        vectors=VectorStore(QdrantClient(":memory:"), prefix="chunks", server=False),
        embedder=make_embedder(app_settings),
    )
    app.config["TEST_KEYS"] = {"tenant": tenant_key(app, "acme"), "admin": admin_key(app)}
    return schemathesis.openapi.from_wsgi("/openapi.json", app)


EXAMPLES_PER_OPERATION = 40


@pytest.mark.parametrize("role", ["tenant", "admin"])
def test_no_5xx_and_responses_match_the_document(api_schema: Any, role: str) -> None:
    """Each operation of the document, with examples drawn from its own schemas (by schemathesis,
    driven here directly: its pytest plugin does not load under this pytest)."""
    key = api_schema.app.config["TEST_KEYS"][role]
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 15
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: Any) -> None:
            case.call_and_validate(headers=auth(key), checks=CHECKS)

        check()
