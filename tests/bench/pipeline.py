"""End to end on the embedded topology: the real `deploy/embedded.py` process, driven over HTTP.

Each document is uploaded alone and polled until `completed`. The per-stage costs come from the
`job_stages` rows (started_at, finished_at), so the client's end-to-end time splits into the upload,
the wait before the first stage, the stages, the hops between them and the time to see completion.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
from sqlalchemy import select

from shared.db import Database, migrate
from shared.models import Job, JobStage
from shared.queue import STAGES
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
POLL_INTERVAL_S = 0.02
TERMINAL = {"completed", "failed", "dead_lettered", "cancelled"}


@dataclass(frozen=True)
class EndToEnd:
    """One document through the whole pipeline, timed by the client and by the job's own rows."""

    name: str
    pages: int
    ocr_pages: int
    chunks: int
    client_s: float  # upload request sent → the client sees `completed`
    upload_s: float  # upload request sent → the job row exists
    queued_s: float  # job row → the first stage starts
    stages: dict[str, float]  # seconds each stage ran
    between_stages_s: float  # one stage finished → the next started, summed
    completion_seen_s: float  # the last stage finished → the client sees `completed`

    @property
    def stages_s(self) -> float:
        return sum(self.stages.values())

    @property
    def hop_overhead_s(self) -> float:
        """What the end-to-end time spends outside the stages themselves."""
        return self.client_s - self.stages_s


class EmbeddedService:
    """A running `deploy/embedded.py` on a free port, with its data in `workdir`, and a tenant's key."""

    def __init__(self, workdir: Path) -> None:
        self.settings = Settings.from_env(
            data_dir=str(workdir / "data"), host="127.0.0.1", port=free_port(), log_level="WARNING"
        )
        self.base_url = f"http://{self.settings.host}:{self.settings.port}"
        self.log_path = workdir / "embedded.log"
        self.db = Database(self.settings.effective_database_url)
        self.key = ""
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60) -> None:
        migrate(self.settings.effective_database_url)
        with self.db.transaction() as session:
            _, self.key = create_tenant(session, "bench")
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "INGEST_DATA_DIR": self.settings.data_dir,
            "INGEST_HOST": self.settings.host,
            "INGEST_PORT": str(self.settings.port),
            "INGEST_LOG_LEVEL": self.settings.log_level,
            # The embedded defaults, whatever this shell points at.
            "INGEST_BROKER_URL": "",
            "INGEST_DATABASE_URL": "",
            "INGEST_QDRANT_URL": "",
            "INGEST_STORAGE_BACKEND": "local",
        }
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                [sys.executable, str(ROOT / "deploy" / "embedded.py")],
                env=env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"deploy/embedded.py exited at start:\n{self.log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base_url}/healthz", timeout=1).status_code == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"deploy/embedded.py did not answer within {timeout_s}s:\n{self.log_tail()}")

    def stop(self) -> None:
        """Ctrl-C the process as an operator would, then make sure nothing it started outlives it."""
        process = self._process
        self._process = None
        if process is not None and process.poll() is None:
            # Parse children run in sessions of their own (ingest_worker.isolation): note them first.
            descendants = _descendants(process.pid)
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            _end_stragglers(descendants)
        self.db.dispose()

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def ingest(self, name: str, pdf: bytes, timeout_s: float = 300) -> EndToEnd:
        """Upload `pdf`, wait for `completed` and time it."""
        headers = {"Authorization": f"Bearer {self.key}"}
        with httpx.Client(base_url=self.base_url, headers=headers, timeout=60) as client:
            sent = time.time()
            response = client.post("/v1/documents", files={"file": (name, pdf, "application/pdf")})
            if response.status_code != 202:
                raise RuntimeError(f"upload of {name} answered {response.status_code}: {response.text}")
            location = response.headers["Location"]
            deadline = time.monotonic() + timeout_s
            while True:
                job = client.get(location).json()
                if job["status"] in TERMINAL:
                    seen = time.time()
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name} did not finish within {timeout_s}s: {job}")
                time.sleep(POLL_INTERVAL_S)
        if job["status"] != "completed":
            raise RuntimeError(f"{name} ended {job['status']}: {job['error']}\n{self.log_tail()}")
        return self._timings(name, job["job_id"], sent, seen)

    def _timings(self, name: str, job_id: str, sent: float, seen: float) -> EndToEnd:
        with self.db.transaction() as session:
            job = session.get(Job, job_id)
            assert job is not None
            columns = (JobStage.stage, JobStage.started_at, JobStage.finished_at)
            rows = session.execute(select(*columns).where(JobStage.job_id == job_id)).all()
            created, pages, ocr_pages, chunks = job.created_at, job.pages, job.ocr_pages, job.chunks
        spans = {stage: (_epoch(start), _epoch(end)) for stage, start, end in rows if end is not None}
        ordered = [spans[stage] for stage in STAGES]
        return EndToEnd(
            name=name,
            pages=pages,
            ocr_pages=ocr_pages,
            chunks=chunks,
            client_s=seen - sent,
            upload_s=_epoch(created) - sent,
            queued_s=ordered[0][0] - _epoch(created),
            stages={stage: end - start for stage, (start, end) in spans.items()},
            between_stages_s=sum(nxt[0] - prev[1] for prev, nxt in itertools.pairwise(ordered)),
            completion_seen_s=seen - ordered[-1][1],
        )


@contextlib.contextmanager
def embedded_service(workdir: Path) -> Iterator[EmbeddedService]:
    """A started embedded service, stopped (with everything it started) on the way out."""
    service = EmbeddedService(workdir)
    try:
        service.start()
        yield service
    finally:
        service.stop()


def _epoch(moment: datetime) -> float:
    # The service stores naive UTC timestamps (shared.models.utcnow).
    return moment.replace(tzinfo=UTC).timestamp()


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                found += [int(child), *_descendants(int(child))]
    return found


def _end_stragglers(pids: list[int], grace_s: float = 5) -> None:
    """Children exit when their parent's pipes close; SIGKILL any still there after `grace_s`."""
    deadline = time.monotonic() + grace_s
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [pid for pid in alive if Path(f"/proc/{pid}").exists() and not _is_zombie(pid)]
        time.sleep(0.1)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True
