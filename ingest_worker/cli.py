"""Operator commands. They act through the database, never through a running process's broker.

python -m ingest_worker.cli migrate
python -m ingest_worker.cli tenant NAME        # prints the new tenant's API key last
python -m ingest_worker.cli demo               # migrate, ensure the demo tenant, print its key
python -m ingest_worker.cli reindex NAME [--from index|embed|chunk|extract] [--model M] [--dim D] [--dry-run]
python -m ingest_worker.cli reindex NAME --cancel
python -m ingest_worker.cli migrate-vectors    # move local-mode vectors into the embedded engine's store
python -m ingest_worker.cli compact-vectors    # vacuum deleted points out of it (service stopped)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from sqlalchemy import select

from ingest_worker.reindex.command import cmd_reindex
from shared import reindex as reindexes
from shared.db import Database, migrate
from shared.errors import IngestError
from shared.models import DeadLetter, Job, KeyRole, Tenant
from shared.operations import retry_job
from shared.settings import Settings
from shared.tenants import create_tenant, get_tenant_by_name, new_api_key


def cmd_migrate(settings: Settings) -> int:
    migrate(settings.effective_database_url)
    print("database is at the newest schema")
    return 0


def cmd_migrate_vectors(settings: Settings) -> int:
    """What the embedded process does on its first start, run by hand (while it is stopped)."""
    from shared.vectorstores import EdgeStore
    from shared.vectorstores.migration import migrate_local_mode

    if settings.qdrant_url or settings.embedded_vector_store != "edge":
        print("nothing to move: the vectors are not in the embedded engine's store", file=sys.stderr)
        return 1
    store = EdgeStore(settings.effective_edge_path, prefix=settings.qdrant_collection_prefix)
    try:
        moved = migrate_local_mode(settings.effective_qdrant_path, store)
    finally:
        store.close()
    if moved.skipped:
        print("nothing to move: no local-mode data, or moved before")
    for name, count in moved.collections.items():
        print(f"{name}: {count} points")
    return 0


def cmd_compact_vectors(settings: Settings) -> int:
    """Vacuum the embedded engine's shards, while the service is stopped (it holds the folder)."""
    from shared.vectorstores import EdgeStore

    store = EdgeStore(settings.effective_edge_path, prefix=settings.qdrant_collection_prefix)
    try:
        for name, seconds in store.compact().items():
            print(f"{name}: {seconds:.1f} s")
    finally:
        store.close()
    return 0


def cmd_tenant(settings: Settings, name: str) -> int:
    migrate(settings.effective_database_url)
    db = Database.from_settings(settings)
    with db.transaction() as session:
        if get_tenant_by_name(session, name) is not None:
            print(f"tenant {name!r} already exists", file=sys.stderr)
            return 1
        tenant, key = create_tenant(session, name)
    print(f"created tenant {name} ({tenant.id}); its API key, shown once:")
    print(key)
    return 0


def cmd_key(settings: Settings, name: str) -> int:
    migrate(settings.effective_database_url)
    db = Database.from_settings(settings)
    with db.transaction() as session:
        tenant = get_tenant_by_name(session, name)
        if tenant is None:
            print(f"no tenant {name!r}", file=sys.stderr)
            return 1
        key = new_api_key(session, tenant)
    print(f"new API key for tenant {name}, shown once:")
    print(key)
    return 0


def cmd_admin_key(settings: Settings) -> int:
    migrate(settings.effective_database_url)
    db = Database.from_settings(settings)
    with db.transaction() as session:
        key = new_api_key(session, None, KeyRole.ADMIN)
    print("new admin API key, shown once:")
    print(key)
    return 0


def cmd_demo(settings: Settings) -> int:
    """The embedded topology's convenience: a demo tenant whose key is kept in the data dir."""
    migrate(settings.effective_database_url)
    key_file = Path(settings.data_dir) / "demo-api-key"
    db = Database.from_settings(settings)
    with db.transaction() as session:
        tenant = get_tenant_by_name(session, settings.demo_tenant)
        if tenant is None or not key_file.exists():
            if tenant is None:
                _, key = create_tenant(session, settings.demo_tenant)
            else:
                key = new_api_key(session, tenant)
            key_file.parent.mkdir(parents=True, exist_ok=True)
            key_file.write_text(key + "\n")
            os.chmod(key_file, 0o600)
    print(key_file.read_text().strip())
    return 0


def cmd_dlq(settings: Settings) -> int:
    db = Database.from_settings(settings)
    with db.transaction() as session:
        rows = session.execute(
            select(DeadLetter, Tenant.name)
            .join(Tenant, Tenant.id == DeadLetter.tenant_id)
            .where(DeadLetter.replayed_at.is_(None))
            .order_by(DeadLetter.created_at)
        ).all()
        print(f"{'job':36}  {'tenant':12}  {'stage':8}  {'retries':>7}  {'when':19}  error")
        for letter, tenant in rows:
            when = letter.created_at.strftime("%Y-%m-%d %H:%M:%S")
            print(
                f"{letter.job_id:36}  {tenant[:12]:12}  {letter.stage:8}  {letter.retries:>7}  {when}  "
                f"{letter.error_code}: {letter.error_message}"
            )
    print(f"{len(rows)} dead-lettered job(s)")
    return 0


def cmd_replay(settings: Settings, job_id: str) -> int:
    """Queue the job again through the outbox; a running service's relay publishes it."""
    db = Database.from_settings(settings)
    with db.transaction() as session:
        job = session.get(Job, job_id)
        if job is None:
            print(f"no job {job_id}", file=sys.stderr)
            return 1
        try:
            retry_job(session, job)
        except IngestError as exc:
            print(f"{exc.code}: {exc.message}", file=sys.stderr)
            return 1
    print(f"job {job_id} queued again from its first unfinished stage")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="ingest_worker.cli", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate", help="apply database migrations")
    sub.add_parser("migrate-vectors", help="move local-mode vectors into the embedded engine's store")
    sub.add_parser("compact-vectors", help="vacuum deleted points out of the embedded engine's store")
    tenant = sub.add_parser("tenant", help="create a tenant and print its API key")
    tenant.add_argument("name")
    key = sub.add_parser("key", help="create another API key for a tenant")
    key.add_argument("name")
    sub.add_parser("admin-key", help="create an admin API key")
    sub.add_parser("demo", help="ensure the demo tenant and print its API key")
    sub.add_parser("dlq", help="list dead-lettered jobs")
    replay = sub.add_parser("replay", help="run a failed or dead-lettered job again")
    replay.add_argument("job_id")
    reindex = sub.add_parser("reindex", help="reindex a tenant without downtime")
    reindex.add_argument("name")
    reindex.add_argument("--from", dest="from_stage", default="embed", choices=reindexes.FROM_STAGES)
    reindex.add_argument("--model", default=None, help="embedding model (default: the active one)")
    reindex.add_argument("--dim", type=int, default=None, help="its dimension, when it has several")
    reindex.add_argument("--dry-run", action="store_true", help="say what would be done, change nothing")
    reindex.add_argument("--no-wait", dest="wait", action="store_false", help="do not show the progress")
    reindex.add_argument("--cancel", action="store_true", help="cancel the running reindex")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    if args.command == "migrate":
        return cmd_migrate(settings)
    if args.command == "migrate-vectors":
        return cmd_migrate_vectors(settings)
    if args.command == "compact-vectors":
        return cmd_compact_vectors(settings)
    if args.command == "tenant":
        return cmd_tenant(settings, args.name)
    if args.command == "key":
        return cmd_key(settings, args.name)
    if args.command == "admin-key":
        return cmd_admin_key(settings)
    if args.command == "dlq":
        return cmd_dlq(settings)
    if args.command == "replay":
        return cmd_replay(settings, args.job_id)
    if args.command == "reindex":
        return cmd_reindex(
            settings,
            args.name,
            from_stage=args.from_stage,
            model=args.model or None,
            dimension=args.dim or None,
            dry_run=args.dry_run,
            wait=args.wait,
            cancel=args.cancel,
        )
    return cmd_demo(settings)


if __name__ == "__main__":
    sys.exit(main())
