"""`make reindex`: start, resume or cancel a tenant's reindex through the database, and watch it.

The command writes rows and never reaches into a broker; the service does the work and the flip, so
closing the terminal stops only the progress bar.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from shared import reindex as reindexes
from shared.db import Database, migrate
from shared.errors import IngestError
from shared.models import Reindex, ReindexStatus
from shared.settings import Settings
from shared.tenants import get_tenant_by_name


def bar(done: int, failed: int, total: int, elapsed_s: float, started_done: int, width: int = 30) -> str:
    """One line of progress: the bar, done/failed/total, the rate since the command started, ETA."""
    final = done + failed
    filled = width if total == 0 else round(width * final / total)
    rate = (final - started_done) / elapsed_s if elapsed_s > 0 else 0.0
    left = total - final
    eta = f"{left / rate:.0f}s" if rate > 0 else "--"
    return (
        f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} done, {failed} failed, "
        f"{rate:.1f} docs/s, ETA {eta}"
    )


def describe_plan(name: str, plan: dict[str, Any]) -> str:
    """A dry run's plan in words."""
    states = plan["documents"]
    starts = ", ".join(f"{n} from {stage}" for stage, n in plan["jobs_by_first_stage"].items()) or "none"
    earlier = plan["earlier_than_asked"]
    if earlier:
        starts += " (earlier than asked: " + ", ".join(f"{n} {why}" for why, n in earlier.items()) + ")"
    model, dimension = plan["target_model"]
    active_model, active_dimension = plan["active_model"]
    active = f"version {plan['active_version']} active ({active_model}, {active_dimension} dimensions)"
    return "\n".join(
        [
            f"tenant {name}: {active}",
            ("would resume the running reindex" if plan["resumes"] else "would start a reindex")
            + f" to {model} ({dimension} dimensions)",
            f"jobs to create: {starts}",
            f"documents already done: {states.get('done', 0)}, running: {states.get('pending', 0)}, "
            f"waiting for their upload: {states.get('waiting', 0)}, failed: {states.get('failed', 0)}, "
            f"never indexed (skipped): {states.get('unindexed', 0)}",
        ]
    )


def cmd_reindex(
    settings: Settings,
    name: str,
    *,
    from_stage: str,
    model: str | None,
    dimension: int | None,
    dry_run: bool,
    wait: bool,
    cancel: bool = False,
    interval_s: float = 1.0,
) -> int:
    """Start (or resume) the tenant's reindex, then show its progress until the service flips it;
    or cancel the one running."""
    migrate(settings.effective_database_url)
    db = Database.from_settings(settings)
    options = {"model": model, "dimension": dimension, "from_stage": from_stage}
    try:
        with db.transaction() as session:
            tenant = get_tenant_by_name(session, name)
            if tenant is None:
                print(f"no tenant {name!r}", file=sys.stderr)
                return 1
            if cancel:
                cancelled = reindexes.cancel(session, tenant.id)
                print(
                    f"reindex to version {cancelled.target_version} cancelled; version "
                    f"{cancelled.source_version} stays active"
                )
                return 0
            if dry_run:
                plan = reindexes.plan(session, settings, tenant.id, **options)
                print(describe_plan(name, plan))
                print("dry run: nothing was changed")
                return 0
            reindex, created = reindexes.start(session, settings, tenant.id, **options)
            reindex_id, target = reindex.id, reindex.target_version
            print(
                f"reindexing tenant {name} into version {target} ({reindex.embedding_model}, "
                f"{reindex.embedding_dim} dimensions, from {reindex.from_stage}): {reindex.total} "
                f"document(s), {created} job(s) created (the service creates the rest as these end)"
            )
    except IngestError as exc:
        print(f"{exc.code}: {exc.message}", file=sys.stderr)
        return 1
    if not wait:
        return 0
    try:
        return watch(db, reindex_id, target, interval_s)
    except KeyboardInterrupt:
        print("\nstopped watching; the reindex goes on (the same command shows it again)")
        return 130


def watch(db: Database, reindex_id: str, target: int, interval_s: float) -> int:
    """The progress bar until the reindex is no longer running, then a summary."""
    started, first_done = time.monotonic(), None
    while True:
        with db.transaction() as session:
            row = session.get(Reindex, reindex_id)
            assert row is not None
            status = row.status
            now = reindexes.progress(session, row)
            failures = row.failures or now.failures
        if first_done is None:
            first_done = now.done + now.failed
        line = bar(now.done, now.failed, now.total, time.monotonic() - started, first_done)
        if status == ReindexStatus.RUNNING.value and now.final:
            line += "  (waiting for the service to flip)"
        print("\r" + line, end="", flush=True)
        if status != ReindexStatus.RUNNING.value:
            break
        time.sleep(interval_s)
    print()
    elapsed = time.monotonic() - started
    if status == ReindexStatus.FLIPPED.value:
        print(f"version {target} is active: {now.done} document(s) reindexed in {elapsed:.0f}s")
        return 0
    if status == ReindexStatus.CANCELLED.value:
        print(f"reindex cancelled: version {target} not activated")
        return 1
    for failure in failures:
        print(f"  failed: document {failure.get('document_id')}: {failure.get('error_code')}")
    print(
        f"reindex {status}: version {target} not activated; {len(failures)} document(s) failed "
        "(the same command retries them)"
    )
    return 1
