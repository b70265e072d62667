"""The `ingest` command line: upload (and follow), search, jobs, documents, and the admin's dead letters.
The service's address and key come from INGEST_URL and INGEST_API_KEY, or --url and --key."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from ingest_client.client import Client
from ingest_client.errors import ApiError
from ingest_client.progress import pdfs_in, upload_and_follow


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ingest", description="The PDF ingestion service from a shell.")
    parser.add_argument("--url", default=os.environ.get("INGEST_URL"), help="the service (INGEST_URL)")
    parser.add_argument("--key", default=os.environ.get("INGEST_API_KEY"), help="API key (INGEST_API_KEY)")
    commands = parser.add_subparsers(dest="command", required=True)
    upload = commands.add_parser("upload", help="upload PDFs (files or folders of *.pdf)")
    upload.add_argument("paths", nargs="+", metavar="FILES_OR_DIRS")
    upload.add_argument("--wait", action="store_true", help="follow each job to its end")
    upload.add_argument("--callback-url")
    upload.add_argument("--ocr-languages", help="e.g. deu+eng")
    upload.add_argument("--force", action="store_true", help="ingest again what is already there")
    search = commands.add_parser("search", help="search your documents (hybrid, dense or keyword)")
    search.add_argument("query")
    search.add_argument("--top-k", type=int, default=5)
    search.add_argument("--document", help="only this document's chunks")
    search.add_argument(
        "--mode", choices=("hybrid", "dense", "keyword"), help="the service's default if unset"
    )
    jobs = commands.add_parser("jobs", help="your jobs, newest first")
    jobs.add_argument("--status", help="queued, running, completed, failed, dead_lettered, cancelled, ...")
    jobs.add_argument("--kind", help="ingest, delete or reindex")
    jobs.add_argument("--limit", type=int, default=20)
    for name, text in (("job", "one job"), ("cancel", "cancel a job"), ("retry", "retry a failed job")):
        commands.add_parser(name, help=text).add_argument("job_id", metavar="JOB")
    documents = commands.add_parser("documents", help="your documents, newest first")
    documents.add_argument("--limit", type=int, default=20)
    dlq = commands.add_parser("dlq", help="(admin) dead-lettered jobs")
    dlq.add_argument("--include-replayed", action="store_true")
    commands.add_parser("replay", help="(admin) run a failed or dead-lettered job again").add_argument(
        "job_id", metavar="JOB"
    )
    return parser


def _table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if value is None else str(value) for value in row))
    return table


def _job_line(job: dict[str, Any]) -> str:
    error = job.get("error") or {}
    tail = f" {error.get('code')}: {error.get('message')}" if error else ""
    return f"{job['job_id']} {job['status']} {job.get('stage') or ''} {job.get('progress', 0)}%{tail}"


def run(args: argparse.Namespace, client: Client, console: Console) -> int:
    """Carry out one parsed command; returns the exit status."""
    rows: list[tuple[Any, ...]]
    if args.command == "upload":
        files = pdfs_in(args.paths)
        if not files:
            console.print("no PDF files found")
            return 1
        return upload_and_follow(
            client,
            files,
            console,
            wait=args.wait,
            callback_url=args.callback_url,
            ocr_languages=args.ocr_languages,
            force=args.force,
        )
    if args.command == "search":
        answer = client.search(args.query, top_k=args.top_k, document_id=args.document, mode=args.mode)
        rows = [
            (f"{r['score']:.3f}", r["document_id"], f"{r['page_start']}-{r['page_end']}", r["text"][:80])
            for r in answer["results"]
        ]
        console.print(_table(f"Search: {args.query}", ("score", "document", "pages", "text"), rows))
    elif args.command == "jobs":
        items = client.jobs(status=args.status, kind=args.kind, limit=args.limit)["items"]
        columns = ("job", "kind", "status", "stage", "progress", "error", "updated")
        rows = [
            (j["job_id"], j["kind"], j["status"], j.get("stage"), j.get("progress"),
             (j.get("error") or {}).get("code"), j.get("updated_at"))
            for j in items
        ]  # fmt: skip
        console.print(_table("Jobs", columns, rows))
    elif args.command in {"job", "cancel", "retry", "replay"}:
        call = {"job": client.job, "cancel": client.cancel, "retry": client.retry, "replay": client.replay}
        console.print(_job_line(call[args.command](args.job_id)))
    elif args.command == "documents":
        items = client.documents(limit=args.limit)["items"]
        rows = [
            (
                d["document_id"],
                d.get("filename"),
                d.get("page_count"),
                (d.get("latest_job") or {}).get("status"),
            )
            for d in items
        ]
        console.print(_table("Documents", ("document", "file", "pages", "latest job"), rows))
    elif args.command == "dlq":
        items = client.dead_letters(include_replayed=args.include_replayed)
        rows = [
            (
                d["job_id"],
                d.get("tenant_id"),
                d.get("stage"),
                (d.get("error") or {}).get("code"),
                d.get("created_at"),
            )
            for d in items
        ]
        console.print(_table("Dead letters", ("job", "tenant", "stage", "error", "at"), rows))
    return 0


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    """The `ingest` entry point: 0 on success, 1 when the service refused or a file failed, 2 on bad use."""
    args = _parser().parse_args(argv)
    console = console or Console()
    if not args.url or not args.key:
        console.print("set INGEST_URL and INGEST_API_KEY (or pass --url and --key)")
        return 2
    try:
        with Client(args.url, args.key) as client:
            return run(args, client, console)
    except ApiError as error:
        console.print(f"error: {error.code} ({error.status}): {error.message}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
