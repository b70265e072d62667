"""The embedded topology's vector store at scale: the engine in-process (`EdgeStore`) and, side by side
with fewer queries, qdrant-client's local mode, on the same points.

One tenant holds 60,000 points, nine tenants share 40,000, and one tenant has none (`--quick`: a tenth).
Points are 384-d random unit vectors with 150-word chunks from a Zipf vocabulary (sparse BM25 vectors as
the index stage makes them). Every query is fresh (a new random vector, four random words) and goes
through the adapter's `search`. Phases: the fill (upserts/s), idle, while another thread upserts, and
after deleting those and running `optimize()` (vacuum and merges; indexing is off, so no HNSW graph is
built). A `/healthz` served
from a thread of this process is asked every 10 ms by another process: its longest answer in a phase is
the longest stall. Recall@10 of dense search is measured against exact (numpy) search.

    python -m tests.bench.vector_store [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

import numpy as np
from qdrant_client import QdrantClient

from shared.sparse import document_vector, query_vector
from shared.vectorstores import EdgeStore, QdrantClientStore, VectorStore
from tests.bench.vector_store_report import Phase, StoreRun, VectorBench, vector_section

DIMENSION, VOCABULARY, CHUNK_WORDS, BATCH = 384, 20_000, 150, 256
LARGE, EMPTY, SHARED = "large", "empty", [f"shared-{i}" for i in range(9)]
MODES = ("dense", "hybrid")
HEALTHZ_PORT = 18211


class Corpus:
    """The points, generated once and written into each adapter alike."""

    def __init__(self, large: int, shared: int, seed: int = 7) -> None:
        rng = np.random.default_rng(seed)
        self.rng = rng
        tenants = [LARGE] * large + [SHARED[i % len(SHARED)] for i in range(shared)]
        order = rng.permutation(len(tenants))
        self.tenants = [tenants[i] for i in order]
        vectors = rng.standard_normal((len(tenants), DIMENSION)).astype(np.float32)
        self.vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        words = np.minimum(rng.zipf(1.3, size=(len(tenants), CHUNK_WORDS)), VOCABULARY)
        self.sparse = [document_vector(" ".join(f"w{w}" for w in row)) for row in words]
        self.ids = [str(uuid.UUID(int=i + 1)) for i in range(len(tenants))]
        self.large_rows = np.array([i for i, t in enumerate(self.tenants) if t == LARGE])

    def batches(self) -> Iterator[tuple[list[str], list[list[float]], list[dict[str, Any]], list[Any]]]:
        for start in range(0, len(self.ids), BATCH):
            end = min(start + BATCH, len(self.ids))
            payloads = [
                {
                    "tenant_id": self.tenants[i],
                    "document_id": f"d{i // 50}",
                    "job_id": "j",
                    "index_version": 1,
                }
                | {"chunk_index": i}
                for i in range(start, end)
            ]
            yield self.ids[start:end], self.vectors[start:end].tolist(), payloads, self.sparse[start:end]

    def query(self) -> tuple[list[float], Any]:
        vector = self.rng.standard_normal(DIMENSION)
        words = " ".join(f"w{w}" for w in np.minimum(self.rng.zipf(1.3, size=4), VOCABULARY))
        return (vector / np.linalg.norm(vector)).tolist(), query_vector(words)


def search(store: VectorStore, name: str, tenant: str, mode: str, corpus: Corpus) -> tuple[float, list[Any]]:
    dense, sparse = corpus.query()
    began = time.perf_counter()
    hits = store.search(name, tenant, index_version=1, top_k=10, mode=mode, dense=dense, sparse=sparse)
    return time.perf_counter() - began, [dense, hits]


def measure_phase(store: VectorStore, name: str, corpus: Corpus, queries: int, label: str) -> Phase:
    latencies: dict[tuple[str, str], list[float]] = {}
    recalls: list[float] = []
    began = time.time()
    for tenant in (LARGE, EMPTY):
        for mode in MODES:
            for _ in range(queries):
                took, (dense, hits) = search(store, name, tenant, mode, corpus)
                latencies.setdefault((tenant, mode), []).append(took)
                if tenant == LARGE and mode == "dense":
                    recalls.append(recall_at_10(corpus, dense, hits))
    return Phase(
        label, {k: tuple(v) for k, v in latencies.items()}, float(np.mean(recalls)), (began, time.time())
    )


def recall_at_10(corpus: Corpus, dense: list[float], hits: list[Any]) -> float:
    scores = corpus.vectors[corpus.large_rows] @ np.asarray(dense, dtype=np.float32)
    exact = set(corpus.large_rows[np.argsort(-scores)[:10]].tolist())
    return len(exact & {h.payload["chunk_index"] for h in hits}) / 10


@contextmanager
def healthz_probe(workdir: Path) -> Iterator[Callable[[tuple[float, float]], float]]:
    """Serve `/healthz` from a thread, probe it from another process; yield: the longest answer (ms)
    begun within a (start, end) window, read once the probe has stopped."""

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    server = make_server("127.0.0.1", HEALTHZ_PORT, app, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    out = workdir / "probe.json"
    probe = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.bench.healthz_probe",
            f"http://127.0.0.1:{HEALTHZ_PORT}/healthz",
            str(out),
        ]
    )
    samples: list[tuple[float, float]] = []

    def longest(window: tuple[float, float]) -> float:
        inside = [lat for began, lat in samples if window[0] <= began <= window[1]]
        return 1000 * max(inside, default=0.0)

    try:
        time.sleep(1.0)
        yield longest
    finally:
        probe.send_signal(signal.SIGTERM)
        probe.wait(timeout=120)
        server.shutdown()
        server.server_close()
        import json

        samples.extend(tuple(s) for s in json.loads(out.read_text()))


def run_store(
    kind: str, store: VectorStore, corpus: Corpus, queries: int, workdir: Path, extra: int
) -> tuple[StoreRun, list[tuple[str, tuple[float, float]]]]:
    name = store.collection("bench", DIMENSION)
    store.ensure_collection(name, DIMENSION)
    windows: list[tuple[str, tuple[float, float]]] = []
    spent, began = 0.0, time.time()
    for ids, vectors, payloads, sparse in corpus.batches():
        started = time.perf_counter()
        store.upsert(name, ids, vectors, payloads, sparse)
        spent += time.perf_counter() - started
    windows.append(("fill", (began, time.time())))
    phases = [measure_phase(store, name, corpus, queries, "idle")]
    writer = threading.Thread(target=upsert_more, args=(store, name, corpus, extra), daemon=True)
    began = time.time()
    writer.start()
    phases.append(measure_phase(store, name, corpus, queries, "while upserts run"))
    writer.join()
    windows.append(("while upserts run", (began, time.time())))
    optimize_s = None
    if isinstance(store, EdgeStore):
        shard = store._shard(name)
        assert shard is not None
        # The points written while searching are deleted first, so that the optimizer has a vacuum to do.
        store.delete(name, SHARED[0], job_id="w")
        began = time.time()
        shard.optimize()
        optimize_s = time.time() - began
        windows.append(("optimize()", (began, time.time())))
        phases.append(measure_phase(store, name, corpus, queries, "after optimize()"))
    run = StoreRun(kind, len(corpus.ids), len(corpus.ids) / spent, tuple(phases), optimize_s, {})
    return run, windows


def upsert_more(store: VectorStore, name: str, corpus: Corpus, count: int) -> None:
    """`count` more points for the shared tenants (so the large tenant's recall base stays as is)."""
    for start in range(0, count, BATCH):
        size = min(BATCH, count - start)
        rows = corpus.rng.integers(len(corpus.ids), size=size)
        ids = [str(uuid.UUID(int=10**9 + start + i)) for i in range(size)]
        payloads = [{"tenant_id": SHARED[0], "document_id": "x", "job_id": "w", "index_version": 1}] * size
        vectors = corpus.vectors[rows].tolist()
        store.upsert(name, ids, vectors, payloads, [corpus.sparse[r] for r in rows])


def measure_vector_store(
    large: int = 60_000,
    shared: int = 40_000,
    queries: int = 200,
    old_queries: int = 10,
    old_share: float = 0.2,
) -> VectorBench:
    """Local mode gets `old_share` of the points (in the same proportions): it writes about a hundred
    points a second, so the whole set would take it half an hour."""
    workdir = Path(tempfile.mkdtemp(prefix="ingest-bench-vectors-"))
    corpus = Corpus(large, shared)
    smaller = Corpus(round(large * old_share), round(shared * old_share)) if old_share < 1 else corpus
    runs: list[StoreRun] = []
    try:
        with healthz_probe(workdir) as longest:
            all_windows = []
            edge = EdgeStore(workdir / "edge", prefix="bench")
            try:
                run, windows = run_store(
                    "engine in-process (EdgeStore)", edge, corpus, queries, workdir, large // 6
                )
            finally:
                edge.close()
            runs.append(run)
            all_windows.append(windows)
            local = QdrantClientStore(
                QdrantClient(path=str(workdir / "qdrant")), prefix="bench", server=False
            )
            try:
                run, windows = run_store(
                    "local mode (QdrantClientStore)", local, smaller, old_queries, workdir, BATCH
                )
            finally:
                local.close()
            runs.append(run)
            all_windows.append(windows)
        for run, windows in zip(runs, all_windows, strict=True):
            run.stalls_ms.update({label: longest(window) for label, window in windows})
            run.stalls_ms.update({p.label: longest(p.window) for p in run.phases})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return VectorBench(large=large, shared=shared, runs=tuple(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    found = measure_vector_store(6_000, 4_000, 30, 5, 1.0) if args.quick else measure_vector_store()
    print(vector_section(found))


if __name__ == "__main__":
    main()
