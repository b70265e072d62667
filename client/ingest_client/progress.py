"""`ingest upload --wait`: a live progress bar per file (stage and percentage), then a summary table."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn
from rich.table import Table

from ingest_client.client import Client
from ingest_client.models import JobUpdate, UploadResult

MAX_FOLLOWED_AT_ONCE = 8


@dataclass
class Outcome:
    """How one file ended: its upload's answer and, when it was followed, the job's final state."""

    upload: UploadResult
    final: JobUpdate | None = None

    @property
    def status(self) -> str:
        if self.upload.error is not None:
            return "refused"
        return self.final.status if self.final is not None else str(self.upload.status or "queued")

    @property
    def error(self) -> str:
        if self.upload.error is not None:
            return f"{self.upload.error.code}: {self.upload.error.message}"
        error = self.final.error if self.final is not None else None
        return f"{error.get('code')}: {error.get('message')}" if error else ""


def pdfs_in(paths: list[str]) -> list[Path]:
    """The files named, and every *.pdf under the folders named, in order."""
    found: list[Path] = []
    for name in paths:
        path = Path(name)
        found.extend(
            sorted(p for p in path.rglob("*") if p.suffix.lower() == ".pdf") if path.is_dir() else [path]
        )
    return found


def _follow(client: Client, progress: Progress, task: TaskID, outcome: Outcome) -> None:
    assert outcome.upload.job_id is not None
    for update in client.wait(outcome.upload.job_id):
        label = update.stage or update.status
        progress.update(task, completed=update.progress, stage=f"{update.status} {label}")
        outcome.final = update
    if outcome.final is not None and outcome.final.status == "completed":
        progress.update(task, completed=100)


def upload_and_follow(
    client: Client,
    files: list[Path],
    console: Console,
    *,
    wait: bool,
    callback_url: str | None = None,
    ocr_languages: str | None = None,
    force: bool = False,
) -> int:
    """Upload `files`; with `wait`, follow every job to its end. Returns the exit status: 1 when any
    file was refused or its job did not complete."""
    outcomes: list[Outcome] = []
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TextColumn("{task.fields[stage]}"),
        console=console,
    )
    with progress:
        tasks: list[tuple[TaskID, Outcome]] = []
        for path in files:
            upload = client.upload_one(
                path, callback_url=callback_url, ocr_languages=ocr_languages, force=force
            )
            outcome = Outcome(upload)
            outcomes.append(outcome)
            state = outcome.status if outcome.upload.error is None else outcome.error
            tasks.append((progress.add_task(path.name, total=100, stage=state), outcome))
        if wait:
            with ThreadPoolExecutor(max_workers=MAX_FOLLOWED_AT_ONCE) as pool:
                futures = [
                    pool.submit(_follow, client, progress, task, outcome)
                    for task, outcome in tasks
                    if outcome.upload.job_id is not None
                ]
                for future in futures:
                    future.result()
    console.print(summary(outcomes))
    failed = [o for o in outcomes if o.upload.error is not None or (wait and o.status != "completed")]
    if failed:
        console.print(f"{len(failed)} of {len(outcomes)} files failed")
    return 1 if failed else 0


def summary(outcomes: list[Outcome]) -> Table:
    """One row per file: its job, how it ended, its pages and chunks, and its error."""
    table = Table(title="Uploads")
    for column in ("file", "job", "status", "pages", "chunks", "error"):
        table.add_column(column)
    for outcome in outcomes:
        counters = (outcome.final.job.get("counters") or {}) if outcome.final is not None else {}
        table.add_row(
            outcome.upload.filename,
            outcome.upload.job_id or "-",
            outcome.status + (" (duplicate)" if outcome.upload.duplicate else ""),
            str(counters.get("pages", "")),
            str(counters.get("chunks", "")),
            outcome.error,
        )
    return table
