"""The client's document calls: metadata at upload and by PATCH, chunks, page texts and the original."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest_client import ApiError, Client
from tests.client.conftest import Served
from tests.support.pdfs import text_pdf

PDF = text_pdf(
    ["The warranty covers parts for two years. " * 30, "Returns are accepted within a month. " * 30]
)


def _finish(client: Client, job_id: str | None) -> str:
    assert job_id is not None
    return list(client.wait(job_id, timeout_s=60))[-1].status


def test_metadata_content_and_the_original_through_the_client(served: Served, tmp_path: Path) -> None:
    with served.client(served.tenant_key()) as client:
        # Given a document uploaded with metadata
        upload = client.upload([("warranty.pdf", PDF)], metadata={"team": "support", "year": 2026})[0]
        assert _finish(client, upload.job_id) == "completed"
        document_id = str(upload.document_id)
        assert client.document(document_id)["metadata"] == {"team": "support", "year": 2026}

        # When its metadata is replaced, then the document shows it and the job that rewrites its points ends
        job = client.update_metadata(document_id, {"team": "legal"})
        assert client.document(document_id)["metadata"] == {"team": "legal"}
        assert _finish(client, job["job_id"]) == "completed"

        # And its chunks (page by page of the cursor), page texts and original file come back as ingested
        chunks = list(client.iter_chunks(document_id, page_size=1))
        assert len(chunks) >= 2 and "warranty covers parts" in chunks[0]["text"]
        pages = client.text(document_id)["pages"]
        assert [p["source"] for p in pages] == ["text", "text"]
        saved = client.download(document_id, tmp_path / "copy.pdf")
        assert saved.read_bytes() == PDF

        # And another tenant's key sees none of it
    with served.client(served.tenant_key("other")) as stranger:
        for call in (
            lambda: stranger.text(document_id),
            lambda: stranger.download(document_id, tmp_path / "x"),
        ):
            with pytest.raises(ApiError) as refused:
                call()
            assert refused.value.status == 404


def test_search_modes_and_filters_through_the_client(served: Served) -> None:
    with served.client(served.tenant_key()) as client:
        # Given two documents with metadata
        first = client.upload([("warranty.pdf", PDF)], metadata={"team": "support"})[0]
        second = client.upload([("other.pdf", text_pdf(["Zircon gaskets need torque. " * 30]))])[0]
        assert _finish(client, first.job_id) == _finish(client, second.job_id) == "completed"

        # When it searches each way, and through a metadata filter
        modes = {m: client.search("warranty parts", top_k=3, mode=m)["mode"] for m in ("dense", "keyword")}
        kept = client.search(
            "gaskets", top_k=5, filter={"metadata": [{"key": "team", "eq": "support"}]}, mode="dense"
        )["results"]

        # Then each mode answers as asked and the filter keeps only the matching document's chunks
        assert modes == {"dense": "dense", "keyword": "keyword"}
        assert kept and {h["document_id"] for h in kept} == {first.document_id}
        assert all(h["metadata"] == {"team": "support"} for h in kept)
