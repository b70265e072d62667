"""Downloading a large original streams it: the gateway's memory does not grow with the file."""

from __future__ import annotations

import hashlib
import resource
import tracemalloc
from typing import Any

from shared.models import Document
from shared.tenants import create_tenant
from tests.conftest import auth
from tests.support.object_stores import PseudoRandomStream

LARGE_FILE_BYTES = 200 * 1024 * 1024
# What the download may hold at once: a few of the storage's pieces and the test client's buffers.
MAX_TRACED_PEAK_BYTES = 8 * 1024 * 1024
MAX_RSS_GROWTH_BYTES = 32 * 1024 * 1024


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def test_a_200_mb_original_downloads_in_flat_memory(app: Any) -> None:
    # Given a 200 MB original stored directly in object storage, as the document of a tenant
    svc = app.extensions["ingest"]
    stream = PseudoRandomStream(LARGE_FILE_BYTES)
    svc.storage.put_file("documents/large.pdf", stream)
    with svc.db.transaction() as session:
        tenant, key = create_tenant(session, "acme")
        document = Document(
            tenant_id=tenant.id,
            filename="large.pdf",
            sha256=stream.sha256.hexdigest(),
            size_bytes=LARGE_FILE_BYTES,
            object_key="documents/large.pdf",
        )
        session.add(document)
        session.flush()
        document_id = document.id
    # When it is downloaded through the gateway, the client consuming the stream piece by piece
    rss_before = peak_rss_bytes()
    tracemalloc.start()
    try:
        answer = app.test_client().get(f"/v1/documents/{document_id}/file", headers=auth(key), buffered=False)
        digest, received = hashlib.sha256(), 0
        for piece in answer.response:
            digest.update(piece)
            received += len(piece)
        answer.close()
        _, traced_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rss_growth = peak_rss_bytes() - rss_before
    # Then every byte arrived, and the process held a few pieces at a time, never the file
    assert answer.status_code == 200 and answer.is_streamed
    assert received == LARGE_FILE_BYTES and digest.hexdigest() == stream.sha256.hexdigest()
    traced_mib, rss_mib = traced_peak / 2**20, rss_growth / 2**20
    print(f"200 MB download: peak traced {traced_mib:.1f} MiB, RSS high-water growth {rss_mib:.1f} MiB")
    assert traced_peak < MAX_TRACED_PEAK_BYTES
    assert rss_growth < MAX_RSS_GROWTH_BYTES
