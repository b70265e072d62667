"""The accept path's backlog run: a tenant with many queued jobs, written fast with SQL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import text

from tests.chaos.cluster import Cluster

if TYPE_CHECKING:
    from tests.bench.accept_path import AcceptPath


def add_backlog(cluster: Cluster, tenant_id: str, jobs: int) -> None:
    """`jobs` queued ingest jobs (each with its document) for the tenant, written with SQL in one
    statement each, and the tenant's counters moved by as much, as uploads would have."""
    assert cluster.db is not None
    params = {"tenant": tenant_id, "n": jobs}
    with cluster.db.transaction() as session:
        session.execute(
            text(
                "INSERT INTO documents (id, tenant_id, filename, sha256, size_bytes, object_key, created_at)"
                " SELECT 'b' || lpad(i::text, 35, '0'), :tenant, 'backlog.pdf',"
                " encode(sha256((:tenant || i)::bytea), 'hex'), 1024, 'documents/backlog/' || i,"
                " now() - interval '1 hour' FROM generate_series(1, :n) AS i"
            ),
            params,
        )
        session.execute(
            text(
                "INSERT INTO jobs (id, tenant_id, document_id, kind, status, progress, pages, ocr_pages,"
                " ocr_pages_dropped, chunks, points, attempts, index_version, seq, recoveries, created_at,"
                " updated_at) SELECT 'j' || lpad(i::text, 35, '0'), :tenant, 'b' || lpad(i::text, 35, '0'),"
                " 'ingest', 'queued', 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, now() - interval '1 hour',"
                " now() - interval '1 hour' FROM generate_series(1, :n) AS i"
            ),
            params,
        )
        session.execute(
            text(
                "UPDATE tenants SET active_jobs = active_jobs + :n, stored_bytes = stored_bytes + 1024 * :n"
                " WHERE id = :tenant"
            ),
            params,
        )
    with cluster.db.engine.connect() as conn:
        conn.execute(text("ANALYZE documents, jobs"))


def backlog_rows(result: AcceptPath) -> list[str]:
    """The new tenant's and the backlogged tenant's accept path, as table rows."""
    if result.empty is None or result.backlogged is None:
        return []
    rows = [
        "| tenant | uploads/s | p50 | p99 | CPU / upload: machine | run | gateway |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, t in (("new", result.empty), (f"{result.backlog_jobs:,} queued jobs", result.backlogged)):
        rows.append(
            f"| {name} | {t.per_s:.1f} | {t.percentile_ms(50):.0f} ms | {t.percentile_ms(99):.0f} ms "
            f"| {t.cpu_ms(t.machine_cpu_s):.0f} ms | {t.cpu_ms(t.run_cpu_s):.1f} ms "
            f"| {t.cpu_ms(t.gateway_cpu_s):.1f} ms |"
        )
    return rows
