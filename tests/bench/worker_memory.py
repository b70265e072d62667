"""Peak memory of the worker processes on a long PDF against a short one.

    python -m tests.bench.worker_memory [--pages 10,1000]

For each document, the worker pools of a cluster (tests/chaos/cluster.py: private PostgreSQL, Redis and
S3, `dramatiq` pools as `make worker` lays them out) are started afresh, so each process's high-water
mark (VmHWM in /proc/<pid>/status) belongs to that one document; the document is uploaded and ingested
with the tests' embeddings server. Reported: the ingest pool's worker process, its parse children
(validate and extract run in them, with their own memory cap) and the index pool's worker process.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.bench.documents import text_document
from tests.chaos.check import wait_final
from tests.chaos.cluster import INDEX, INGEST, Cluster
from tests.support.openai_server import OpenAIServer

PAGES = (10, 1000)


@dataclass(frozen=True)
class WorkerMemory:
    pages: int
    chunks: int
    seconds: float
    ingest_worker_mb: float
    parse_children_mb: float
    index_worker_mb: float


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                found += [int(child), *_descendants(int(child))]
    return found


def _hwm_mb(pid: int) -> float:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _is_parse_child(pid: int) -> bool:
    try:
        return b"isolation_child" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class _Sampler:
    """Keeps the highest VmHWM seen of each kind of process, sampled while the document runs (parse
    children may be replaced, and their marks go with them)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.peaks = {INGEST: 0.0, "parse": 0.0, INDEX: 0.0}

    def sample(self) -> None:
        for pool in (INGEST, INDEX):
            process = self.cluster.processes.get(pool)
            if process is None:
                continue
            for pid in _descendants(process.pid):
                kind = "parse" if _is_parse_child(pid) else pool
                self.peaks[kind] = max(self.peaks[kind], _hwm_mb(pid))


def measure_worker_memory(pages: tuple[int, ...] = PAGES) -> list[WorkerMemory]:
    results = []
    with OpenAIServer() as provider:
        workdir = Path(tempfile.mkdtemp(prefix="memory-bench-"))
        cluster = Cluster(workdir, provider, max_pages=max(pages) + 1, max_upload_mb=500)
        try:
            cluster.start()
            tenant_id, key = cluster.new_tenant("bench")
            for count in pages:
                pdf = text_document(count)
                for pool in (INGEST, INDEX):
                    cluster.restart(pool)
                sampler = _Sampler(cluster)
                started = time.monotonic()
                with cluster.client(key) as client:
                    response = client.post(
                        "/v1/documents", files={"file": (f"{count}.pdf", pdf, "application/pdf")}
                    )
                    if response.status_code != 202:
                        raise RuntimeError(f"upload answered {response.status_code}: {response.text}")
                    job_id = response.json()["job_id"]
                while True:
                    sampler.sample()
                    jobs = wait_final(cluster, tenant_id, 0)
                    if jobs[job_id].status in ("completed", "failed", "dead_lettered", "cancelled"):
                        break
                    if time.monotonic() - started > 900:
                        raise RuntimeError("the document did not finish within 15 minutes")
                    time.sleep(0.2)
                sampler.sample()
                job = jobs[job_id]
                if job.status != "completed":
                    raise RuntimeError(f"the {count}-page document ended {job.status} ({job.error_code})")
                results.append(
                    WorkerMemory(
                        count,
                        job.chunks,
                        time.monotonic() - started,
                        sampler.peaks[INGEST],
                        sampler.peaks["parse"],
                        sampler.peaks[INDEX],
                    )
                )
        finally:
            cluster.stop()
            shutil.rmtree(workdir, ignore_errors=True)
    return results


TABLE_HEADER = (
    "| document | chunks | seconds | ingest worker peak | its parse children's peak | index worker peak |\n"
    "| --- | --- | --- | --- | --- | --- |"
)


def table_row(m: WorkerMemory) -> str:
    return (
        f"| {m.pages}-page text PDF | {m.chunks} | {m.seconds:.0f} | {m.ingest_worker_mb:.0f} MB "
        f"| {m.parse_children_mb:.0f} MB | {m.index_worker_mb:.0f} MB |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default=",".join(map(str, PAGES)))
    args = parser.parse_args()
    results = measure_worker_memory(tuple(int(p) for p in args.pages.split(",")))
    print("\n".join([TABLE_HEADER, *(table_row(m) for m in results)]))


if __name__ == "__main__":
    main()
