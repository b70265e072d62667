"""The `ingest` command line, end to end against the running service."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from ingest_client.cli import main
from tests.client.conftest import Served
from tests.support.pdfs import text_pdf, truncated_pdf


def _run(args: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    status = main(args, console=Console(file=out, width=160, force_terminal=False))
    return status, out.getvalue()


@pytest.fixture
def env(served: Served, monkeypatch: pytest.MonkeyPatch) -> Served:
    monkeypatch.setenv("INGEST_URL", served.url)
    monkeypatch.setenv("INGEST_API_KEY", served.tenant_key())
    return served


def _folder(tmp_path: Path, *, broken: bool) -> Path:
    folder = tmp_path / "pdfs"
    folder.mkdir()
    for n in range(2):
        (folder / f"report-{n}.pdf").write_bytes(text_pdf([f"Report {n}: quarterly revenue grew. " * 20]))
    if broken:
        (folder / "broken.pdf").write_bytes(truncated_pdf())
    return folder


def test_upload_a_folder_and_wait(env: Served, tmp_path: Path) -> None:
    # Given a folder of two PDFs
    folder = _folder(tmp_path, broken=False)

    # When it is uploaded with --wait
    status, output = _run(["upload", str(folder), "--wait"])
    print(output)

    # Then every file completed, the summary says so, and the exit status is 0
    assert status == 0, output
    assert output.count("completed") >= 2
    assert "report-0.pdf" in output and "report-1.pdf" in output and "Uploads" in output


def test_a_failing_file_gives_a_non_zero_exit(env: Served, tmp_path: Path) -> None:
    # Given a folder of two PDFs and a damaged one
    folder = _folder(tmp_path, broken=True)

    # When it is uploaded with --wait
    status, output = _run(["upload", str(folder), "--wait"])
    print(output)

    # Then the summary names the failure and its code, and the exit status is 1
    assert status == 1
    assert "truncated_pdf" in output and "1 of 3 files failed" in output

    # And the other commands see it: jobs, documents, search, one job, retry and cancel
    with env.client(os.environ["INGEST_API_KEY"]) as client:
        job_id = client.jobs(status="failed")["items"][0]["job_id"]
        completed_id = client.jobs(status="completed")["items"][0]["job_id"]
    failed_status, jobs = _run(["jobs", "--status", "failed"])
    assert failed_status == 0 and "truncated_pdf" in jobs and job_id in jobs
    listed = _run(["documents"])[1]
    assert "report-0.pdf" in listed and "broken.pdf" in listed
    assert "Report" in _run(["search", "quarterly revenue", "--top-k", "2"])[1]
    assert _run(["job", job_id])[1].split()[:2] == [job_id, "failed"]
    assert _run(["retry", job_id])[1].split()[:2] == [job_id, "queued"]
    cancel_status, cancelled = _run(["cancel", completed_id])
    assert cancel_status == 1 and "job_not_cancellable (409)" in cancelled


def test_admin_commands_and_errors(env: Served, tmp_path: Path) -> None:
    # Given a failed job
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "broken.pdf").write_bytes(truncated_pdf())
    assert _run(["upload", str(folder), "--wait"])[0] == 1
    with env.client(os.environ["INGEST_API_KEY"]) as client:
        job_id = client.jobs(status="failed")["items"][0]["job_id"]

    # When an admin lists dead letters and replays it, and a tenant tries the same
    admin = ["--key", env.admin_key()]
    dlq_status, dlq = _run([*admin, "dlq"])
    replay_status, replay = _run([*admin, "replay", job_id])
    refused_status, refused = _run(["dlq"])

    # Then the admin's calls answer and the tenant's is refused with the problem's code
    assert (dlq_status, replay_status) == (0, 0) and "Dead letters" in dlq
    assert replay.startswith(job_id) and "queued" in replay
    assert refused_status == 1 and "(403)" in refused


def test_missing_address_or_key_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given no INGEST_URL nor INGEST_API_KEY
    monkeypatch.delenv("INGEST_URL", raising=False)
    monkeypatch.delenv("INGEST_API_KEY", raising=False)

    # When a command runs
    status, output = _run(["jobs"])

    # Then it says what to set and exits 2
    assert status == 2 and "INGEST_URL" in output


def test_the_command_exits_non_zero_when_a_file_fails(env: Served, tmp_path: Path) -> None:
    # Given a folder with a damaged PDF beside good ones
    folder = _folder(tmp_path, broken=True)

    # When the `ingest` command runs as its own process
    done = subprocess.run(
        [sys.executable, "-m", "ingest_client.cli", "upload", str(folder), "--wait"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "160"},
    )

    # Then its exit status is 1 and its summary names the failure
    assert done.returncode == 1, done.stderr
    assert "truncated_pdf" in done.stdout and "1 of 3 files failed" in done.stdout
