"""Recovery time after a worker is killed: SIGKILL in the middle of a stage → the job `completed`.

    python -m tests.bench.recovery [--leases 30,4]

A cluster (tests/chaos/cluster.py) whose ingest pool loads tests/support/slow_stages.py, so the embed stage of
each job pauses a few seconds once; the pool (its main process and worker) is SIGKILLed during that
pause and started again at once, as a supervisor would. Measured for each lease (INGEST_LEASE_S; the
hand-off stall and the Redis heartbeat timeout follow it) against an undisturbed job of the same size.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from tests.bench.documents import text_document
from tests.chaos.check import wait_final
from tests.chaos.cluster import INGEST, Cluster, process_specs
from tests.support.openai_server import OpenAIServer

LEASES = (30, 4)
PAUSE_S = 3


@dataclass(frozen=True)
class Recovery:
    lease_s: int
    undisturbed_s: float
    killed_s: float  # SIGKILL → completed
    total_s: float  # upload → completed, with the kill


def _run(
    cluster: Cluster, key: str, tenant_id: str, markers: Path, pdf: bytes, kill: bool
) -> tuple[float, float]:
    started = time.monotonic()
    with cluster.client(key) as client:
        job_id = client.post("/v1/documents", files={"file": ("r.pdf", pdf, "application/pdf")}).json()[
            "job_id"
        ]
    killed_at = started
    if kill:
        deadline = time.monotonic() + 120
        while not (markers / f"{job_id}-embed").exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the embed stage never started")
            time.sleep(0.05)
        cluster.restart(INGEST)
        killed_at = time.monotonic()
    job = wait_final(cluster, tenant_id, 600)[job_id]
    if job.status != "completed":
        raise RuntimeError(f"the job ended {job.status} ({job.error_code})")
    done = time.monotonic()
    return done - started, done - killed_at


def measure_recovery(leases: tuple[int, ...] = LEASES) -> list[Recovery]:
    results = []
    with OpenAIServer() as provider:
        for lease in leases:
            workdir = Path(tempfile.mkdtemp(prefix="recovery-bench-"))
            markers = workdir / "markers"
            markers.mkdir()
            slow = {"SLOW_STAGE": "embed", "SLOW_STAGE_S": str(PAUSE_S), "SLOW_STAGE_MARKERS": str(markers)}
            cluster = Cluster(
                workdir,
                provider,
                specs=partial(process_specs, plugins=("tests.support.slow_stages",), **slow),
                lease_s=lease,
                handoff_stall_s=lease,
                redis_heartbeat_timeout_s=max(5, lease // 2),
                maintenance_interval_s=2.0 if lease >= 30 else 0.5,
                max_recoveries=3,
            )
            try:
                cluster.start()
                tenant_id, key = cluster.new_tenant("bench")
                # A warm-up, not counted: the first job starts the parse children.
                _run(cluster, key, tenant_id, markers, text_document(2), kill=False)
                undisturbed, _ = _run(cluster, key, tenant_id, markers, text_document(20), kill=False)
                total, after_kill = _run(cluster, key, tenant_id, markers, text_document(21), kill=True)
                results.append(Recovery(lease, undisturbed, after_kill, total))
            finally:
                cluster.stop()
                shutil.rmtree(workdir, ignore_errors=True)
    return results


TABLE_HEADER = (
    "| INGEST_LEASE_S | undisturbed job | job with its worker SIGKILLed mid-embed | SIGKILL → completed |\n"
    "| --- | --- | --- | --- |"
)


def table_row(r: Recovery) -> str:
    return f"| {r.lease_s} | {r.undisturbed_s:.1f} s | {r.total_s:.1f} s | {r.killed_s:.1f} s |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leases", default=",".join(map(str, LEASES)))
    args = parser.parse_args()
    results = measure_recovery(tuple(int(x) for x in args.leases.split(",")))
    print("\n".join([TABLE_HEADER, *(table_row(r) for r in results)]))


if __name__ == "__main__":
    main()
