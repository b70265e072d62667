"""Search latency in Qdrant local mode (the embedded topology's vector store): dense, keyword and hybrid
queries over one tenant's points beside another tenant's, at several collection sizes.

Points are synthetic: random unit vectors of the offline model's 384 dimensions and chunks of 150
words drawn from a Zipf-distributed vocabulary of 20,000 words, weighted by `shared/sparse.py` as the
index stage weighs real chunks. Queries: a random vector and four words of a random chunk. Half the
points belong to the searching tenant, so every query also pays for the tenant and version filter and
for IDF counted over the tenant's own points.

    python -m tests.bench.search_latency [--sizes 10000,50000] [--queries 100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from qdrant_client import QdrantClient

from shared.sparse import document_vector, query_vector
from shared.vectorstores import QdrantClientStore

DIMENSION = 384
VOCABULARY = 20_000
CHUNK_WORDS = 150
MODES = ("dense", "keyword", "hybrid")
TENANT, OTHER = "bench-tenant", "bench-other"


@dataclass(frozen=True)
class SearchLatency:
    """Per (points, mode): the latencies of the queries, in seconds."""

    latencies_s: dict[tuple[int, str], tuple[float, ...]]
    load: tuple[float, float]

    def percentile_ms(self, points: int, mode: str, p: float) -> float:
        ordered = sorted(self.latencies_s[(points, mode)])
        return 1000 * ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _fill(store: QdrantClientStore, name: str, points: int, rng: np.random.Generator) -> list[str]:
    """`points` synthetic chunks, alternately of the tenant and of another; returns the tenant's texts."""
    words = np.array([f"w{i}" for i in range(VOCABULARY)])
    texts: list[str] = []
    for start in range(0, points, 1000):
        count = min(1000, points - start)
        vectors = rng.standard_normal((count, DIMENSION)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        batch = [
            " ".join(words[np.minimum(rng.zipf(1.3, CHUNK_WORDS), VOCABULARY) - 1]) for _ in range(count)
        ]
        payloads = [
            {"tenant_id": TENANT if (start + i) % 2 == 0 else OTHER, "index_version": 1, "text": t}
            for i, t in enumerate(batch)
        ]
        ids = [str(uuid.UUID(int=start + i + 1)) for i in range(count)]
        store.upsert(name, ids, vectors.tolist(), payloads, [document_vector(t) for t in batch])
        texts.extend(t for i, t in enumerate(batch) if (start + i) % 2 == 0)
    return texts


def measure_search_latency(sizes: tuple[int, ...] = (10_000, 50_000), queries: int = 100) -> SearchLatency:
    load_before = os.getloadavg()[0]
    rng = np.random.default_rng(7)
    found: dict[tuple[int, str], tuple[float, ...]] = {}
    for points in sizes:
        workdir = Path(tempfile.mkdtemp(prefix="ingest-bench-search-"))
        store = QdrantClientStore(QdrantClient(path=str(workdir / "qdrant")), prefix="bench", server=False)
        try:
            name = store.collection("synthetic", DIMENSION)
            store.ensure_collection(name, DIMENSION)
            texts = _fill(store, name, points, rng)
            for mode in MODES:
                latencies = []
                for _ in range(queries):
                    vector = rng.standard_normal(DIMENSION)
                    words = texts[int(rng.integers(len(texts)))].split()
                    query = " ".join(words[int(i)] for i in rng.integers(len(words), size=4))
                    began = time.perf_counter()
                    store.search(
                        name,
                        TENANT,
                        index_version=1,
                        top_k=5,
                        mode=mode,
                        dense=(vector / np.linalg.norm(vector)).tolist() if mode != "keyword" else None,
                        sparse=query_vector(query) if mode != "dense" else None,
                    )
                    latencies.append(time.perf_counter() - began)
                found[(points, mode)] = tuple(latencies)
        finally:
            store.close()
            shutil.rmtree(workdir, ignore_errors=True)
    return SearchLatency(latencies_s=found, load=(load_before, os.getloadavg()[0]))


def search_section(result: SearchLatency) -> str:
    rows = ["| Points (tenant's half) | Mode | p50 | p99 |", "|---|---|---|---|"]
    for points, mode in result.latencies_s:
        rows.append(
            f"| {points:,} ({points // 2:,}) | {mode} | {result.percentile_ms(points, mode, 50):.1f} ms "
            f"| {result.percentile_ms(points, mode, 99):.1f} ms |"
        )
    queries = len(next(iter(result.latencies_s.values())))
    return (
        "## Search latency (local mode)\n\n"
        "`tests/bench/search_latency.py`: `VectorStore.search` on Qdrant local mode (exact search, one "
        f"process), {queries} queries per row, top 5, over synthetic points (384-d random vectors, "
        "150-word chunks from a Zipf vocabulary, half of them another tenant's). Keyword and hybrid count "
        "IDF over the tenant's own points on every query. Local mode filters and scores in Python over "
        "every point, so its cost grows with the collection: this is why search defaults to dense in the "
        "embedded topology. A Qdrant server scores in Rust with payload indexes on the tenant (`is_tenant`) "
        "and an HNSW index for the dense vectors, so neither figure grows like this there; no server runs "
        "here to measure it.\n\n"
        + "\n".join(rows)
        + f"\n\nLoad average {result.load[0]:.1f} before, {result.load[1]:.1f} after, "
        f"on {os.cpu_count()} cores."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,50000")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    print(search_section(measure_search_latency(sizes, args.queries)))


if __name__ == "__main__":
    main()
