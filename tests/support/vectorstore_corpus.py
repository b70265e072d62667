"""A deterministic corpus for the vector store tests and bench: chunks of random words whose dense
vector is the sum of their words' vectors, so dense, keyword and hybrid search each find something."""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from shared.sparse import document_vector, term_index, tokens
from shared.vectorstores import VectorStore

WORDS = [
    "harbor",
    "lantern",
    "copper",
    "meadow",
    "glacier",
    "orbit",
    "pepper",
    "quartz",
    "raven",
    "saddle",
    "timber",
    "velvet",
    "walnut",
    "yarrow",
    "zenith",
    "amber",
    "basalt",
    "cinder",
    "dune",
    "ember",
    "fjord",
    "garnet",
    "hollow",
    "iris",
    "jasper",
    "kelp",
    "lichen",
    "marble",
    "nectar",
    "opal",
    "prism",
    "quill",
    "reef",
    "spruce",
    "tundra",
    "umber",
    "vapor",
    "willow",
]
DOCUMENTS = 3


def chunk_id(tenant: str, document: str, chunk: int, version: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{tenant}/{document}/{chunk}/{version}"))


@dataclass
class Corpus:
    """What `write_corpus` wrote: (document, chunk index, version) per tenant, and how to embed text."""

    dimension: int
    keys: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    texts: dict[str, dict[tuple[str, int, int], str]] = field(default_factory=dict)

    def query_vector(self, text: str) -> list[float]:
        total = np.zeros(self.dimension)
        for term in tokens(text):
            total += np.random.default_rng(term_index(term)).normal(size=self.dimension)
        norm = float(np.linalg.norm(total)) or 1.0
        return [float(x) for x in total / norm]


def write_corpus(
    store: VectorStore,
    name: str,
    *,
    seed: int,
    dimension: int,
    tenants: Sequence[str],
    versions: Sequence[int],
    chunks: int,
) -> Corpus:
    """`chunks` chunks over three documents per (tenant, version), written through the store."""
    rng = random.Random(seed)
    corpus = Corpus(dimension)
    for tenant in tenants:
        for version in versions:
            ids, vectors, payloads, texts = [], [], [], []
            for chunk in range(chunks):
                document = f"doc-{chunk % DOCUMENTS}"
                # A length of its own per chunk, so no two BM25 scores tie and rankings compare exactly.
                text = " ".join(rng.choices(WORDS, k=8 + 2 * chunk + rng.randint(0, 1)))
                page = chunk % 5 + 1
                ids.append(chunk_id(tenant, document, chunk, version))
                vectors.append(corpus.query_vector(text))
                texts.append(text)
                payloads.append(
                    {
                        "tenant_id": tenant,
                        "document_id": document,
                        "job_id": f"job-{document}-v{version}",
                        "filename": f"{document}.pdf",
                        "chunk_index": chunk,
                        "page_start": page,
                        "page_end": page + chunk % 2,
                        "text": text,
                        "index_version": version,
                        "metadata": {"year": 2020 + chunk % 5, "score": rng.random()},
                    }
                )
                corpus.keys.setdefault(tenant, []).append((document, chunk, version))
                corpus.texts.setdefault(tenant, {})[(document, chunk, version)] = text
            store.upsert(name, ids, vectors, payloads, sparse=[document_vector(t) for t in texts])
    return corpus
