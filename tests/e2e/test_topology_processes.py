"""The production topology exactly as deploy/topology.py lays it out (gunicorn gateway, dramatiq pools,
maintenance loop), against PostgreSQL, Redis and an S3 server: an upload completes, both sides'
/metrics count it, the logs are JSON lines carrying the ids, and a SIGTERM in the middle of a job
loses nothing once the pool is back."""

from __future__ import annotations

import dataclasses
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from sqlalchemy import select

from deploy.supervisor import Topology
from deploy.topology import ProcessSpec, process_specs
from shared.db import Database
from shared.models import JobStage
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.support.pdfs import text_pdf
from tests.support.ports import free_port, free_port_block

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis, pytest.mark.s3]

POOLS = ("worker-ingest", "worker-index")


@pytest.fixture
def topology_settings(production_settings: Settings) -> Settings:
    # The one end-to-end test of the production processes with the offline model, as deployed.
    return production_settings.replace(
        embedder="local",
        port=free_port(),
        # Pool i serves its metrics on metrics_port + i.
        metrics_port=free_port_block(len(POOLS)),
        log_json=True,
        gateway_workers=1,
        worker_processes=1,
        maintenance_interval_s=0.5,
    )


def slowed(spec: ProcessSpec, markers: Path) -> ProcessSpec:
    """The ingest pool with the test plug-in that pauses the extract stage once per job."""
    if spec.name != "worker-ingest":
        return spec
    at = spec.argv.index("ingest_worker.actors") + 1
    return dataclasses.replace(
        spec,
        argv=[*spec.argv[:at], "tests.support.slow_stages", *spec.argv[at:]],
        env={**spec.env, "SLOW_STAGE": "extract", "SLOW_STAGE_S": "3", "SLOW_STAGE_MARKERS": str(markers)},
    )


@pytest.fixture
def topology(topology_settings: Settings, tmp_path: Path) -> Iterator[Topology]:
    markers = tmp_path / "markers"
    markers.mkdir()
    specs = [slowed(s, markers) for s in process_specs(topology_settings, pools=POOLS)]
    running = Topology(specs, tmp_path / "logs", restart_on_death=True)
    running.start()
    try:
        running.wait_ready(f"http://127.0.0.1:{topology_settings.port}/readyz", timeout_s=90)
        yield running
    finally:
        running.stop()


def wait_for(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def samples(url: str) -> dict[str, float]:
    """`name{labels}` -> value of a Prometheus text exposition."""
    text = requests.get(url, timeout=10).text
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


def test_an_upload_through_separate_processes_survives_a_sigterm_mid_job(
    topology: Topology, topology_settings: Settings, pg_db: Database, tmp_path: Path
) -> None:
    gateway = f"http://127.0.0.1:{topology_settings.port}"
    with pg_db.transaction() as session:
        tenant, key = create_tenant(session, "acme")
        tenant_id = tenant.id
    # Given an upload accepted by the gunicorn gateway
    response = requests.post(
        f"{gateway}/v1/documents",
        headers={"Authorization": f"Bearer {key}"},
        files={"file": ("two.pdf", text_pdf(["Rivers cut canyons. " * 40, "Stars fuse hydrogen. " * 40]))},
        timeout=30,
    )
    assert response.status_code == 202
    job_id = response.json()["job_id"]
    # When the ingest pool gets SIGTERM while the job's extract stage is under way
    wait_for(lambda: (tmp_path / "markers" / f"{job_id}-extract").exists(), 60, "the extract stage")
    first = topology.procs["worker-ingest"]
    topology.kill("worker-ingest", signal.SIGTERM)
    # Then the pool finishes that stage and exits cleanly, and the supervisor starts it again
    assert first.wait(timeout=60) == 0
    wait_for(lambda: topology.restarts["worker-ingest"] == 1, 30, "the ingest pool to be restarted")
    # And the job completes with no stage run twice
    headers = {"Authorization": f"Bearer {key}"}

    def finished() -> bool:
        return requests.get(f"{gateway}/v1/jobs/{job_id}", headers=headers, timeout=10).json()["status"] in {
            "completed",
            "failed",
            "dead_lettered",
        }

    wait_for(finished, 120, "the job to finish")
    job = requests.get(f"{gateway}/v1/jobs/{job_id}", headers=headers, timeout=10).json()
    assert job["status"] == "completed", (job, topology.log("worker-ingest")[-3000:])
    with pg_db.transaction() as session:
        attempts = dict(
            session.execute(select(JobStage.stage, JobStage.attempts).where(JobStage.job_id == job_id)).all()
        )
    assert attempts == dict.fromkeys(attempts, 1) and len(attempts) == 7
    # And the gateway's /metrics counts the job and the request, the pools' count their stages
    gateway_metrics = samples(f"{gateway}/metrics")
    assert gateway_metrics['ingest_jobs{status="completed"}'] == 1
    assert (
        gateway_metrics['ingest_http_requests_total{method="POST",route="/v1/documents",status="202"}'] == 1
    )
    specs = topology.specs
    ingest_metrics = samples(specs["worker-ingest"].metrics_url)
    index_metrics = samples(specs["worker-index"].metrics_url)
    # extract ran in the pool that was stopped, chunk in its successor: the pool's totals hold both
    for stage in ("validate", "extract", "ocr", "chunk", "embed"):
        assert ingest_metrics[f'ingest_stage_messages_total{{outcome="ok",stage="{stage}"}}'] == 1, stage
    assert ingest_metrics['ingest_stage_duration_seconds_count{outcome="ok",stage="extract"}'] == 1
    assert ingest_metrics['ingest_embedding_tokens_total{embedder="local"}'] > 0
    assert index_metrics['ingest_stage_messages_total{outcome="ok",stage="finalize"}'] == 1
    # And every log line of the worker pools and the gateway is a JSON object; the stage lines carry
    # the job, tenant and message ids
    records = []
    for name in ("gateway", *POOLS):
        for line in topology.log(name).splitlines():
            if line.strip():
                records.append(json.loads(line))
    stage_lines = [r for r in records if r.get("job_id") == job_id and r["message"].startswith("stage ")]
    assert {r["message"].split(":")[0] for r in stage_lines} >= {"stage extract", "stage finalize"}
    assert all(r["tenant_id"] == tenant_id and r["message_id"] for r in stage_lines)
