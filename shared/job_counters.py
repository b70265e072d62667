"""Per-tenant counters the quotas and the relay's lane choice read instead of counting rows.

`tenants.active_jobs` is the number of the tenant's jobs in an active state (queued, running,
retrying, cancel_requested) that are not reindex jobs; `tenants.stored_bytes` the size of its live
documents. The job state machine (`shared/jobs.py`) and the document operations note every change
here as it happens; the changes are written as one UPDATE per tenant at the end of the transaction
that made them (`apply`, or the commit hook below), so they commit with the rows they count.

Writing them last keeps lock order fixed: a transaction takes its job rows first and its tenant
row last, so two transactions never wait on each other's job and tenant rows crosswise (a worker
finishing a job while a deletion cancels that tenant's jobs).
"""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import event, update
from sqlalchemy.orm import Session

from shared.models import JobKind, Tenant

# Where a session keeps the changes its transaction has not written yet: tenant id → [jobs, bytes].
_PENDING = "tenant_counter_changes"


def counted(kind: str) -> bool:
    """Whether jobs of `kind` count towards the tenant's active jobs (reindex jobs do not: they have
    their own lane and window)."""
    return kind != JobKind.REINDEX.value


def note(session: Session, tenant_id: str, *, jobs: int = 0, stored_bytes: int = 0) -> None:
    """Record a change of the tenant's counters, written before the transaction commits."""
    if not jobs and not stored_bytes:
        return
    pending: defaultdict[str, list[int]] = session.info.setdefault(_PENDING, defaultdict(lambda: [0, 0]))
    pending[tenant_id][0] += jobs
    pending[tenant_id][1] += stored_bytes


def take(session: Session, tenant_id: str) -> tuple[int, int]:
    """The tenant's unwritten changes (jobs, bytes), which the caller now writes itself."""
    jobs, stored_bytes = session.info.get(_PENDING, {}).pop(tenant_id, (0, 0))
    return jobs, stored_bytes


def pending_jobs(session: Session) -> dict[str, int]:
    """The change of each tenant's active jobs this transaction has not written yet."""
    return {tenant_id: change[0] for tenant_id, change in session.info.get(_PENDING, {}).items()}


def apply(session: Session) -> None:
    """Write every unwritten change, one UPDATE per tenant in id order."""
    pending = session.info.pop(_PENDING, {})
    for tenant_id in sorted(pending):
        jobs, stored_bytes = pending[tenant_id]
        if jobs or stored_bytes:
            session.execute(
                update(Tenant)
                .where(Tenant.id == tenant_id)
                .values(
                    active_jobs=Tenant.active_jobs + jobs,
                    stored_bytes=Tenant.stored_bytes + stored_bytes,
                )
                .execution_options(synchronize_session=False)
            )


def _forget(session: Session, *_: object) -> None:
    session.info.pop(_PENDING, None)


# Every session: the changes commit with the transaction that made them, or vanish with its rollback.
event.listen(Session, "before_commit", apply)
event.listen(Session, "after_soft_rollback", _forget)
