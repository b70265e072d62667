"""Retrieval quality end to end: paraphrased questions over a small generated corpus must find the chunk
that holds their answer among the top five search results (recall@5), on the embedded topology, in
hybrid search at least as often as in dense search. The real documents' questions are in
tests/ingest_worker/stages/test_retrieval_real.py."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from ingest_worker.resources import Resources
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.support.inprocess import in_process_service
from tests.support.pdfs import text_pdf
from tests.support.retrieval_corpus import CORPUS, QUESTIONS
from tests.support.text_metrics import squash_whitespace

pytestmark = pytest.mark.slow

MIN_RECALL_AT_5 = 0.9
TOP_K = 5
# Below this many chunks the top five would hold most of the right document whatever the ranking.
MIN_CHUNKS = 40
TERMINAL = {"completed", "failed", "dead_lettered", "cancelled"}


@pytest.fixture
def service(settings: Settings) -> Iterator[tuple[Flask, Resources]]:
    """The embedded process's parts, as deploy/embedded.py wires them, with two worker threads and the
    offline model: retrieval quality is what this file measures."""
    with in_process_service(settings.replace(embedder="local"), threads=2) as service:
        yield service.app, service.resources


def wait_completed(
    client: FlaskClient, locations: list[str], key: str, timeout_s: float = 45
) -> list[dict[str, Any]]:
    """Wait until every job is final, assert that each one completed and return them."""
    deadline = time.monotonic() + timeout_s
    pending = set(locations)
    done: list[dict[str, Any]] = []
    while pending and time.monotonic() < deadline:
        for location in sorted(pending):
            job = client.get(location, headers={"Authorization": f"Bearer {key}"}).get_json()
            if job["status"] in TERMINAL:
                assert job["status"] == "completed", job
                pending.discard(location)
                done.append(job)
        time.sleep(0.05)
    assert not pending, f"jobs not final within {timeout_s}s: {sorted(pending)}"
    return done


def section_of(sentence: str) -> str:
    """The heading of the corpus section that holds `sentence` (each page is headings and paragraphs)."""
    for pages in CORPUS.values():
        for page in pages:
            heading = ""
            for block in page.split("\n\n"):
                if "." not in block:
                    heading = block
                elif squash_whitespace(sentence) in squash_whitespace(block):
                    return heading
    raise AssertionError(f"not in the corpus: {sentence}")


def search(client: FlaskClient, key: str, question: str, mode: str) -> list[dict[str, Any]]:
    response = client.get(
        "/v1/search",
        query_string={"q": question, "top_k": TOP_K, "mode": mode},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 200, response.get_json()
    return response.get_json()["results"]


def test_paraphrased_questions_find_their_answer_in_the_top_five(service: tuple[Flask, Resources]) -> None:
    app, resources = service
    client = app.test_client()
    with resources.db.transaction() as session:
        _, key = create_tenant(session, "retrieval")
    # Given a corpus where each answer sentence occurs exactly once
    corpus_text = squash_whitespace(" ".join(page for pages in CORPUS.values() for page in pages))
    for _, answer in QUESTIONS:
        assert corpus_text.count(squash_whitespace(answer)) == 1, answer
    # And the eight documents ingested through the gateway and the whole pipeline
    locations = []
    for name, pages in CORPUS.items():
        response = client.post(
            "/v1/documents",
            headers={"Authorization": f"Bearer {key}"},
            data={"file": (io.BytesIO(text_pdf(pages)), name)},
        )
        assert response.status_code == 202, response.get_json()
        locations.append(response.headers["Location"])
    jobs = wait_completed(client, locations, key)
    chunks = sum(job["counters"]["chunks"] for job in jobs)
    assert chunks >= MIN_CHUNKS, chunks

    # When every question is asked through the search API, in each mode
    recall = {mode: ask_all(client, key, mode) for mode in ("hybrid", "dense", "keyword")}

    # Then at least 90% of them find a chunk holding their answer among the top five, in hybrid search
    # at least as many as in dense search
    print(f"\n{chunks} chunks, {len(QUESTIONS)} paraphrased questions")
    for mode, (at_5, at_1, misses) in recall.items():
        print(f"  {mode:8} recall@{TOP_K} = {at_5:.3f}, recall@1 = {at_1:.3f}")
        for question in misses:
            print(f"    missed: {question}")
    assert recall["hybrid"][0] >= MIN_RECALL_AT_5, recall["hybrid"][2]
    assert recall["hybrid"][0] >= recall["dense"][0]


def ask_all(client: FlaskClient, key: str, mode: str) -> tuple[float, float, list[str]]:
    """recall@5, recall@1 and the questions missed, asking every question in `mode`."""
    misses, first = [], 0
    for question, answer in QUESTIONS:
        results = search(client, key, question, mode)
        texts = [squash_whitespace(hit["text"]) for hit in results]
        hits = [squash_whitespace(answer) in text for text in texts]
        # (a chunk holding the answer names the section the answer is in, or, when it gathers short
        # sections, opens with an earlier one and holds the answer's heading among its paragraphs)
        assert all(
            section_of(answer) in (hit["section"], *hit["text"].split("\n\n"))
            for hit, found in zip(results, hits, strict=True)
            if found
        )
        first += bool(hits) and hits[0]
        if not any(hits):
            misses.append(question)
    return 1 - len(misses) / len(QUESTIONS), first / len(QUESTIONS), misses
