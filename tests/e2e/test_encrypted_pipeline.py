"""End to end on the embedded topology: encrypted uploads, as a client sends them."""

from __future__ import annotations

import io

import pytest
from flask import Flask

from ingest_worker.resources import Resources
from tests.e2e.test_pipeline_embedded import new_key, service, wait_final
from tests.support import hostile_pdfs

pytestmark = pytest.mark.slow

__all__ = ["service"]  # the fixture, shared with the other end-to-end tests

TEXT = "Encrypted for integrity, open to every reader: the service reads it like any other file. " * 8


def test_an_open_aes_file_is_ingested_and_a_locked_one_fails_at_once(
    service: tuple[Flask, Resources],
) -> None:
    app, resources = service
    client = app.test_client()
    _, key = new_key(resources)
    headers = {"Authorization": f"Bearer {key}"}

    # Given an AES-256 file with an empty user password, and one that needs a password
    def upload(data: bytes, name: str) -> str:
        response = client.post("/v1/documents", headers=headers, data={"file": (io.BytesIO(data), name)})
        assert response.status_code == 202, response.get_json()
        return str(response.headers["Location"])

    open_to_all = upload(hostile_pdfs.encrypted_with("AES-256", text=TEXT), "open.pdf")
    locked = upload(hostile_pdfs.encrypted_with("AES-256", user_password="hunter2", text=TEXT), "locked.pdf")

    # When the worker has taken both through the pipeline
    opened, refused = wait_final(client, open_to_all, key), wait_final(client, locked, key)

    # Then the first completes with its text indexed, and the second fails as encrypted on its first attempt
    assert opened["status"] == "completed", opened
    hits = client.get("/v1/search?q=encrypted for integrity", headers=headers).get_json()["results"]
    assert hits and "open to every reader" in hits[0]["text"]
    assert (refused["status"], refused["error"]["code"], refused["attempts"]) == ("failed", "encrypted", 1)
