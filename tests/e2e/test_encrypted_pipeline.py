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


def test_a_key_length_the_cipher_refuses_fails_at_once_with_a_specific_code(
    service: tuple[Flask, Resources],
) -> None:
    app, resources = service
    client = app.test_client()
    _, key = new_key(resources)
    headers = {"Authorization": f"Bearer {key}"}

    # Given RC4 files whose /Length gives no key the cipher takes (7 and 0 bits), and an AES-256 file
    # with a truncated /UE: the errors come from the crypto provider, not from pypdf's own code
    broken = ["RC4-40 with /Length 7", "RC4-128 with /Length 0", "AES-256 with a truncated /UE"]
    locations = []
    for name in broken:
        data = hostile_pdfs.BROKEN_ENCRYPTION[name]()
        response = client.post("/v1/documents", headers=headers, data={"file": (io.BytesIO(data), "x.pdf")})
        assert response.status_code == 202, response.get_json()
        locations.append(str(response.headers["Location"]))

    # When the worker has taken them through the pipeline
    finals = [wait_final(client, location, key) for location in locations]

    # Then each fails as invalid encryption on its first attempt, with no retry
    outcomes = [(job["status"], job["error"]["code"], job["attempts"]) for job in finals]
    assert outcomes == [("failed", "invalid_encryption", 1)] * len(broken), finals
