"""Run a job's stages one by one in the test's thread, as the pipeline would deliver them."""

from __future__ import annotations

from ingest_worker import stage_io
from ingest_worker.actors import STAGE_POLICIES, WORK
from ingest_worker.resources import Resources
from ingest_worker.runner import run_stage
from shared.queue import STAGES


def run_stages(res: Resources, job_id: str, stages: tuple[str, ...] = STAGES) -> None:
    """Run `stages` of the job in order (every stage by default)."""
    for stage in stages:
        policy = STAGE_POLICIES[stage][0]
        run_stage(res, job_id, stage, WORK[stage], policy=policy, on_cancel=stage_io.delete_job_points)
