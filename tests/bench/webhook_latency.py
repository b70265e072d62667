"""How soon a webhook leaves after its event commits, on an idle system.

    python -m tests.bench.webhook_latency [--rounds 10]

The embedded topology in this process (tests/support/inprocess.py: gateway, worker threads, webhook threads
and the maintenance loop at its default interval, SQLite, the start-up heap frozen as
deploy/embedded.py freezes it), and a local receiver that verifies each signature and notes when
the request arrived. After one round to warm up, each round uploads a small text PDF with a
callback to the receiver, waits until the job's webhooks are in, then rests, so every event meets
an idle service (the machine's load average is reported beside the figures). An event's
latency is its arrival at the receiver minus its `timestamp` (the job's `updated_at`, written in the
transaction that commits the event, so the figure slightly overstates commit → received).
`job.queued` is committed by the gateway, `job.started` and `job.completed` by the workers;
`job.stage_completed` is left out, as its throttling (one per job and endpoint every
`INGEST_WEBHOOK_PROGRESS_INTERVAL_S`) delays it on purpose.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from shared.settings import Settings
from shared.startup_heap import freeze_startup_heap
from shared.tenants import create_tenant
from tests.conftest import MODEL_CACHE_DIR, auth
from tests.shared.embedders.fakes import FAKE_EMBEDDER
from tests.support.inprocess import in_process_service
from tests.support.pdfs import text_pdf
from tests.support.webhook_receiver import Receiver, receiver

EVENTS = ("job.queued", "job.started", "job.completed")
TARGET_MS = 100.0
REST_S = 0.5


@dataclass(frozen=True)
class WebhookLatency:
    """Commit → received, in seconds, per event type; and the maintenance loop's interval."""

    latencies_s: dict[str, tuple[float, ...]]
    maintenance_interval_s: float
    load: tuple[float, float]  # the 1-minute load average before and after

    def percentile_ms(self, event: str, p: float) -> float:
        ordered = sorted(self.latencies_s[event])
        return 1000 * ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]

    @property
    def worst_ms(self) -> float:
        return 1000 * max(max(values) for values in self.latencies_s.values())


def _committed_at(stamp: str) -> float:
    return datetime.fromisoformat(stamp.removesuffix("Z")).replace(tzinfo=UTC).timestamp()


def _wait(hook: Receiver, job_id: str) -> None:
    """Until the job's measured events have all arrived."""
    deadline = time.monotonic() + 60
    while not set(EVENTS) <= {e["type"] for e in hook.events if e["data"]["job_id"] == job_id}:
        assert time.monotonic() < deadline, f"job {job_id}: not every webhook arrived"
        time.sleep(0.01)


def measure_webhook_latency(rounds: int = 10) -> WebhookLatency:
    workdir = Path(tempfile.mkdtemp(prefix="ingest-bench-webhooks-"))
    settings = Settings(
        data_dir=str(workdir / "data"),
        model_cache_dir=MODEL_CACHE_DIR,
        embedder=FAKE_EMBEDDER,
        webhook_allow_http=True,
        webhook_allowed_hosts="127.0.0.1",
    )
    found: dict[str, list[float]] = {event: [] for event in EVENTS}
    load_before = os.getloadavg()[0]
    try:
        # The receiver outlives the service, so no delivery meets a closed port on the way out.
        with receiver([]) as hook, in_process_service(settings, maintenance=True) as service:
            with service.resources.db.transaction() as session:
                tenant, key = create_tenant(session, "bench")
                hook.secrets.append(str(tenant.webhook_secret))
            freeze_startup_heap()  # as deploy/embedded.py does once it has started
            client = service.app.test_client()
            # One round more than measured: the first warms the service up (imports, connections).
            measured: set[str] = set()
            for n in range(rounds + 1):
                time.sleep(REST_S)
                pdf = text_pdf([f"Round {n}: a short page that a webhook reports on. " * 10])
                response = client.post(
                    "/v1/documents",
                    headers=auth(key),
                    data={"file": (io.BytesIO(pdf), f"r{n}.pdf"), "callback_url": hook.url},
                    content_type="multipart/form-data",
                )
                assert response.status_code == 202, response.get_json()
                job_id = response.get_json()["job_id"]
                _wait(hook, job_id)
                if n > 0:
                    measured.add(job_id)
            with hook.lock:
                events = [(r.at, r.event) for r in hook.received if r.event is not None]
        for at, event in events:
            if event["type"] in found and event["data"]["job_id"] in measured:
                found[event["type"]].append(at - _committed_at(event["timestamp"]))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return WebhookLatency(
        latencies_s={event: tuple(values) for event, values in found.items()},
        maintenance_interval_s=settings.maintenance_interval_s,
        load=(load_before, os.getloadavg()[0]),
    )


TABLE_HEADER = "| event | committed by | n | median | p95 | max |\n| --- | --- | --- | --- | --- | --- |"
COMMITTED_BY = {"job.queued": "gateway", "job.started": "worker", "job.completed": "worker"}


def table_rows(result: WebhookLatency) -> list[str]:
    return [
        f"| `{event}` | {COMMITTED_BY[event]} | {len(values)} "
        f"| {1000 * statistics.median(values):.1f} ms | {result.percentile_ms(event, 95):.1f} ms "
        f"| {1000 * max(values):.1f} ms |"
        for event, values in result.latencies_s.items()
        if values
    ]


def webhook_section(result: WebhookLatency) -> str:
    worst = result.worst_ms
    verdict = "**met**" if worst < TARGET_MS else "**not met**"
    return (
        "## Webhook latency\n\n"
        "`tests/bench/webhook_latency.py`: the embedded topology in one process (gateway, worker and "
        f"webhook threads, the maintenance loop every {result.maintenance_interval_s:g} s, SQLite) and a "
        "local receiver; small text PDFs uploaded one at a time with a callback, the system idle between "
        "them. Latency: arrival at the receiver minus the event's `timestamp` (written in the committing "
        "transaction). Progress events (`job.stage_completed`) are throttled on purpose and left out.\n\n"
        + "\n".join([TABLE_HEADER, *table_rows(result)])
        + f"\n\nTarget: every webhook within {TARGET_MS:.0f} ms of its commit: {verdict} "
        f"(worst {worst:.1f} ms; load average {result.load[0]:.1f} before, {result.load[1]:.1f} after, "
        f"on {os.cpu_count()} cores)."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    print(webhook_section(measure_webhook_latency(args.rounds)))


if __name__ == "__main__":
    main()
