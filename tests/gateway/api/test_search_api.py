"""`GET` and `POST /v1/search` on the embedded topology (fake embedder): modes, filters, the hit shape,
and a tenant's scope that no filter widens."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask

from gateway.api.search import default_mode
from ingest_worker.resources import Resources
from shared.settings import Settings
from tests.e2e.test_pipeline_embedded import new_key, wait_final
from tests.support.inprocess import in_process_service
from tests.support.pdfs import text_pdf

pytestmark = pytest.mark.slow

PAGES = [
    "Solar panels convert sunlight into electricity using photovoltaic cells. " * 20,
    "The quarterly revenue grew by twelve percent, driven by strong subscription sales. " * 20,
    "The zirconium gasket of the pump must be replaced every eighteen months. " * 20,
]


@pytest.fixture
def service(settings: Settings) -> Iterator[tuple[Flask, Resources]]:
    with in_process_service(settings) as service:
        yield service.app, service.resources


@pytest.fixture
def indexed(service: tuple[Flask, Resources]) -> dict[str, Any]:
    """Tenants A and B with the same three-page document; A also with the pages in reverse order."""
    app, resources = service
    client = app.test_client()
    found: dict[str, Any] = {"client": client}
    for tenant in ("a", "b"):
        tenant_id, key = new_key(resources, tenant)
        documents = []
        for name, pages in [("manual.pdf", PAGES), ("report.pdf", PAGES[::-1])][: 2 if tenant == "a" else 1]:
            up = client.post(
                "/v1/documents",
                headers={"Authorization": f"Bearer {key}"},
                data={"file": (io.BytesIO(text_pdf(pages)), name)},
            )
            assert up.status_code == 202
            assert wait_final(client, up.headers["Location"], key)["status"] == "completed"
            documents.append(up.get_json()["document_id"])
        found[tenant] = {"tenant_id": tenant_id, "key": key, "documents": documents}
    return found


def post(indexed: dict[str, Any], body: dict[str, Any], tenant: str = "a") -> Any:
    headers = {"Authorization": f"Bearer {indexed[tenant]['key']}"}
    return indexed["client"].post("/v1/search", json=body, headers=headers)


def test_every_mode_answers_with_the_hit_shape(indexed: dict[str, Any]) -> None:
    for mode in ("hybrid", "dense", "keyword"):
        # When tenant A asks in each mode
        response = post(indexed, {"query": "zirconium gasket", "top_k": 3, "mode": mode})
        # Then hits carry document, filename, pages, sections, text, score and metadata
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        assert body["mode"] == mode and body["index_version"] == 1 and body["results"]
        hit = body["results"][0]
        assert hit["document_id"] in indexed["a"]["documents"]
        assert hit["filename"] in ("manual.pdf", "report.pdf") and hit["metadata"] == {}
        assert {"page_start", "page_end", "section", "sections", "text", "score"} <= hit.keys()
        if mode != "dense":
            assert "zirconium" in hit["text"]
    # And GET still answers: hybrid by default in the embedded topology (the engine), any mode on request
    client, headers = indexed["client"], {"Authorization": f"Bearer {indexed['a']['key']}"}
    assert client.get("/v1/search?q=gasket", headers=headers).get_json()["mode"] == "hybrid"
    assert client.post("/v1/search", json={"query": "gasket"}, headers=headers).get_json()["mode"] == "hybrid"
    assert client.get("/v1/search?q=gasket&mode=dense", headers=headers).get_json()["mode"] == "dense"


def test_hybrid_is_the_default_but_on_local_mode(settings: Settings) -> None:
    assert default_mode(settings.replace(qdrant_url="http://qdrant:6333")) == "hybrid"
    assert default_mode(settings) == "hybrid"
    assert default_mode(settings.replace(embedded_vector_store="local")) == "dense"


def test_filters_narrow_the_hits(indexed: dict[str, Any]) -> None:
    manual, report = indexed["a"]["documents"]

    def documents(filter_: dict[str, Any], mode: str = "hybrid") -> set[str]:
        response = post(indexed, {"query": "revenue gasket", "top_k": 20, "mode": mode, "filter": filter_})
        assert response.status_code == 200, response.get_json()
        return {h["document_id"] for h in response.get_json()["results"]}

    assert documents({}) == {manual, report}
    assert documents({"document_ids": [report]}) == {report}
    assert documents({"filename": "manual.pdf"}, "keyword") == {manual}
    assert documents({"page_from": 99}) == set()
    assert documents({"metadata": [{"key": "kind", "eq": "x"}]}) == set()
    assert documents({"metadata": [{"key": "year", "gte": 1, "lte": 3}]}) == set()


def test_min_score_is_applied_per_mode(indexed: dict[str, Any]) -> None:
    for mode in ("hybrid", "dense", "keyword"):
        response = post(indexed, {"query": "gasket", "mode": mode, "min_score": 1000})
        assert response.status_code == 200 and response.get_json()["results"] == []


def test_no_filter_widens_the_tenant_scope(indexed: dict[str, Any]) -> None:
    theirs = indexed["b"]["documents"]
    crafted: list[dict[str, Any]] = [
        {"document_ids": theirs},
        {"document_ids": [*theirs, *indexed["a"]["documents"]]},
        {"metadata": [{"key": "tenant_id", "eq": indexed["b"]["tenant_id"]}]},
        {"metadata": [{"key": "index_version", "in": [1, 2]}]},
    ]
    for filter_ in crafted:
        for mode in ("hybrid", "dense", "keyword"):
            # When tenant A names tenant B's documents or scope-like keys
            response = post(indexed, {"query": "gasket", "mode": mode, "filter": filter_})
            # Then it gets only its own chunks, if any
            assert response.status_code == 200
            assert not {h["document_id"] for h in response.get_json()["results"]} & set(theirs)
    # And keys that are not filter fields, or reach outside `metadata.`, are refused, not ignored
    refused = [
        {"tenant_id": indexed["b"]["tenant_id"]},
        {"index_version": 2},
        {"metadata": [{"key": "metadata.tenant_id", "eq": "x"}]},
        {"metadata": [{"key": "a", "eq": "x", "in": ["y"]}]},
        {"metadata": [{"key": "a", "in": ["x", 1]}]},
    ]
    for filter_ in refused:
        response = post(indexed, {"query": "gasket", "filter": filter_})
        assert response.status_code == 422, (filter_, response.get_json())
        assert response.get_json()["code"] == "invalid_request"
