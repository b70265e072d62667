"""The checker of the failure matrix: every job final, in the state its scenario expects, and the vector
store holding exactly one point per chunk of each completed job and none of any other."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from sqlalchemy import select

from shared.models import Job
from shared.vectorstores import open_vector_store
from tests.chaos.cluster import INDEX, Cluster

FINAL = {"completed", "failed", "dead_lettered", "cancelled"}


@dataclass
class Expected:
    """The final state one job must reach: one of `statuses`, with `code` when it is not completed."""

    job_id: str
    label: str
    statuses: frozenset[str]
    code: str | None = None


@dataclass
class Verdict:
    """What the checker found for one scenario."""

    jobs: int = 0
    final: Counter[str] = field(default_factory=Counter)
    points_expected: int = 0
    points_found: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems


def wait_final(cluster: Cluster, tenant_id: str, timeout_s: float) -> dict[str, Job]:
    """Every job of the tenant once all are final, or as they stand when `timeout_s` runs out."""
    assert cluster.db is not None
    deadline = time.monotonic() + timeout_s
    while True:
        with cluster.db.transaction() as session:
            rows = {job.id: job for job in session.scalars(select(Job).where(Job.tenant_id == tenant_id))}
        if all(job.status in FINAL for job in rows.values()) or time.monotonic() > deadline:
            return rows
        time.sleep(0.5)


def tenant_points(cluster: Cluster, tenant_id: str) -> list[dict[str, object]]:
    """The payload of every point of the tenant, read from the embedded store's folder while the index
    pool (its one owner) is stopped; the pool is started again afterwards."""
    cluster.stop_process(INDEX)
    try:
        store = open_vector_store(cluster.settings)
        try:
            found: list[dict[str, object]] = [
                dict(p.payload) for c in store.collections() for p in store.records(c, tenant_id=tenant_id)
            ]
        finally:
            store.close()
    finally:
        cluster.restart(INDEX, kill=False)
    return found


def check(cluster: Cluster, tenant_id: str, expected: list[Expected], timeout_s: float) -> Verdict:
    """Wait for the tenant's jobs and hold them, and its points, to what the scenario expects."""
    rows = wait_final(cluster, tenant_id, timeout_s)
    verdict = Verdict(jobs=len(rows))
    wanted = {e.job_id: e for e in expected}
    for job in rows.values():
        verdict.final[job.status] += 1
        if job.status not in FINAL:
            verdict.problems.append(f"job {job.id[:8]} not final after {timeout_s:.0f} s: {job.status}")
        if job.id not in wanted:
            verdict.problems.append(f"job {job.id[:8]} ({job.status}) was not expected at all")
    for job_id, want in wanted.items():
        job = rows.get(job_id)
        if job is None:
            verdict.problems.append(f"{want.label}: job {job_id[:8]} is missing")
            continue
        if job.status not in want.statuses:
            verdict.problems.append(
                f"{want.label}: {job.status} ({job.error_code}), expected {'/'.join(sorted(want.statuses))}"
            )
        elif job.status != "completed" and want.code is not None and job.error_code != want.code:
            verdict.problems.append(f"{want.label}: code {job.error_code}, expected {want.code}")
    points = tenant_points(cluster, tenant_id)
    per_job = Counter(str(p["job_id"]) for p in points)
    per_chunk = Counter((p["document_id"], p["chunk_index"]) for p in points)
    verdict.points_found = len(points)
    for job in rows.values():
        want_points = job.chunks if job.status == "completed" else 0
        verdict.points_expected += want_points
        if per_job.get(job.id, 0) != want_points:
            verdict.problems.append(
                f"job {job.id[:8]} ({job.status}): {per_job.get(job.id, 0)} points, expected {want_points}"
            )
        if job.status == "completed" and job.points != job.chunks:
            verdict.problems.append(f"job {job.id[:8]}: counted {job.points} points for {job.chunks} chunks")
    strays = set(per_job) - set(rows)
    if strays:
        verdict.problems.append(f"points of {len(strays)} unknown job(s)")
    duplicated = [key for key, n in per_chunk.items() if n > 1]
    if duplicated:
        verdict.problems.append(f"{len(duplicated)} chunk(s) of a document indexed more than once")
    return verdict
