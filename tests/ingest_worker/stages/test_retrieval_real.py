"""Retrieval quality on the real documents (tests/fixtures/real): questions made from the chunks themselves,
asked in hybrid, dense and keyword search, with recall@5 printed side by side.

Two kinds of question, drawn from evenly spaced chunks of every document: a sentence of the chunk, as
written (does a search find the passage a user quotes?), and the chunk's four rarest words in the corpus
(does it find the passage a user names by its distinctive terms: identifiers, names, numbers?). A question
is answered when a top-five hit of the same document holds the sentence, or all four words.

The documents go through the stages' pure functions (extract, chunk, the index stage's payloads and
sparse vectors) and the offline model into the embedded store `make run` uses (EdgeStore), as one
tenant's corpus. The chunks' vectors are kept between runs (tests/support/vector_cache.py); the
questions' are computed.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from collections.abc import Iterator

import pytest

from ingest_worker.stages.index import PointOrigin, index_points, sparse_vectors
from shared.artifacts import Chunk
from shared.settings import Settings
from shared.sparse import query_vector
from shared.vectorstores import EdgeStore, VectorStore
from tests.ingest_worker.stages.test_real_documents import MANIFEST, _embedder, _result
from tests.support.text_metrics import squash_whitespace
from tests.support.vector_cache import cached_vectors

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils (make test-debs)"),
]

TOP_K = 5
PER_DOCUMENT = 10
MODES = ("hybrid", "dense", "keyword")
MIN_SENTENCE_RECALL, MIN_RARE_WORDS_RECALL = 0.95, 0.85
TENANT = "real"
SENTENCE_END = re.compile(r"(?<=[.!?。])\s+")
WORD = re.compile(r"\w{3,}")

Question = tuple[str, str, list[str]]  # (document, query, what a hit's text must hold)


@pytest.fixture(scope="module")
def corpus(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[VectorStore, str, dict[str, list[Chunk]]]]:
    store = EdgeStore(tmp_path_factory.mktemp("edge") / "edge", prefix="chunks")
    embedder = _embedder()
    name = store.collection(embedder.model_name, embedder.dimension)
    store.ensure_collection(name, embedder.dimension)
    documents = {entry["file"]: _result(entry["file"]).chunks for entry in MANIFEST}
    # The whole corpus in one call: the embedder batches texts of like length, so little is padding.
    texts = [chunk.text for chunks in documents.values() for chunk in chunks]
    vectors = cached_vectors(embedder, Settings.from_env().effective_model_cache_dir, "real-documents", texts)
    for document, chunks in documents.items():
        origin = PointOrigin(
            tenant_id=TENANT,
            document_id=document,
            job_id=f"job-{document}",
            index_version=1,
            embedding_model=embedder.model_name,
            extractor_version=None,
            chunker_version=None,
            filename=document,
        )
        ids, payloads = index_points(chunks, origin)
        store.upsert(name, ids, vectors[: len(chunks)], payloads, sparse_vectors(chunks))
        vectors = vectors[len(chunks) :]
    yield store, name, documents
    store.close()


def _spaced(chunks: list[Chunk]) -> list[Chunk]:
    """Up to PER_DOCUMENT chunks of some length, evenly spaced through the document."""
    usable = [c for c in chunks if len(c.text.split()) >= 30]
    step = max(1, len(usable) // PER_DOCUMENT)
    return usable[::step][:PER_DOCUMENT]


def sentence_questions(documents: dict[str, list[Chunk]]) -> list[Question]:
    """Each chosen chunk's longest sentence of 6 to 40 words."""
    found = []
    for document, chunks in documents.items():
        for chunk in _spaced(chunks):
            sentences = [
                s for s in SENTENCE_END.split(squash_whitespace(chunk.text)) if 6 <= len(s.split()) <= 40
            ]
            if sentences:
                sentence = max(sentences, key=len)
                found.append((document, sentence, [sentence]))
    return found


def rare_word_questions(documents: dict[str, list[Chunk]]) -> list[Question]:
    """Each chosen chunk's four words found in the fewest chunks of the corpus (ties: first seen)."""
    frequency: Counter[str] = Counter()
    for chunks in documents.values():
        for chunk in chunks:
            frequency.update(set(WORD.findall(chunk.text.casefold())))
    found = []
    for document, chunks in documents.items():
        for chunk in _spaced(chunks):
            words = list(dict.fromkeys(WORD.findall(chunk.text.casefold())))
            rarest = sorted(words, key=lambda w: frequency[w])[:4]
            if len(rarest) == 4:
                found.append((document, " ".join(rarest), rarest))
    return found


def recall(
    store: VectorStore, name: str, questions: list[Question], vectors: list[list[float]], mode: str
) -> float:
    """The share of questions (with their queries' dense vectors) answered in the top five."""
    answered = 0
    for (document, query, needles), vector in zip(questions, vectors, strict=True):
        hits = store.search(
            name,
            TENANT,
            index_version=1,
            top_k=TOP_K,
            mode=mode,
            dense=vector if mode != "keyword" else None,
            sparse=query_vector(query) if mode != "dense" else None,
        )
        answered += any(
            hit.payload["document_id"] == document
            and all(
                n in squash_whitespace(hit.payload["text"]).casefold()
                for n in (x.casefold() for x in needles)
            )
            for hit in hits
        )
    return answered / len(questions)


def test_hybrid_search_finds_quoted_sentences_and_rare_words(
    corpus: tuple[VectorStore, str, dict[str, list[Chunk]]],
) -> None:
    store, name, documents = corpus
    # Given questions made from every document's chunks
    kinds = {"sentences": sentence_questions(documents), "rarest words": rare_word_questions(documents)}
    # When each is asked in each mode (its query embedded once, the questions of a kind in one call)
    vectors = {kind: _embedder().embed([query for _, query, _ in qs]) for kind, qs in kinds.items()}
    table = {
        kind: {mode: recall(store, name, qs, vectors[kind], mode) for mode in MODES}
        for kind, qs in kinds.items()
    }
    chunks = sum(len(c) for c in documents.values())
    print(f"\nrecall@{TOP_K} over {len(documents)} real documents ({chunks} chunks)")
    print(f"  {'questions':22}" + "".join(f"{m:>9}" for m in MODES))
    for kind, by_mode in table.items():
        print(f"  {kind + f' ({len(kinds[kind])})':22}" + "".join(f"{by_mode[m]:9.3f}" for m in MODES))
    # Then hybrid search finds nearly every quoted sentence and most rare-word passages, and is never
    # worse than dense search
    assert table["sentences"]["hybrid"] >= MIN_SENTENCE_RECALL
    assert table["rarest words"]["hybrid"] >= MIN_RARE_WORDS_RECALL
    for by_mode in table.values():
        assert by_mode["hybrid"] >= by_mode["dense"]
