"""One Dramatiq actor per stage: job id in, job id handed on through the pipeline.

The broker (with its middleware) is set up before any actor is declared. Each stage's retries and
time limit are the pipeline's declaration (shared/pipeline.py), not Dramatiq's defaults (20 retries
over days and a 10-minute limit are wrong for this work).
"""

from __future__ import annotations

from typing import Any

import dramatiq
from dramatiq.broker import Broker

from ingest_worker import deletion, metadata, stage_io, webhooks
from ingest_worker.broker import get_broker, get_settings
from ingest_worker.ocr import page_ranges
from ingest_worker.resources import current
from ingest_worker.runner import RetryPolicy, StageWork, run_stage
from shared.pipeline import STAGE, Stage
from shared.queue import LANES, actor_for, part_actor_for, queue_for

get_broker()

SECOND_MS = 1000
BACKLOG_PRIORITY = 100
# Reindex work comes after everything else a worker has prefetched.
BULK_PRIORITY = 200
# Workers take a prefetched interactive message before any backlog one, and those before bulk.
LANE_PRIORITY = {"backlog": BACKLOG_PRIORITY, "bulk": BULK_PRIORITY}


def _policy(stage: Stage) -> tuple[RetryPolicy, int]:
    retry = stage.retry
    floor_s, cap_s = retry.backoff_s
    policy = RetryPolicy(retry.retries, int(floor_s * SECOND_MS), int(cap_s * SECOND_MS))
    return policy, retry.time_limit_s * SECOND_MS


# stage: (retry policy, Dramatiq time limit in ms), as the pipeline declares them (shared/pipeline.py).
STAGE_POLICIES: dict[str, tuple[RetryPolicy, int]] = {name: _policy(stage) for name, stage in STAGE.items()}


def _stage_actor(stage: str, work: StageWork, lane: str = "interactive") -> Any:
    settings = get_settings()
    policy, time_limit_ms = STAGE_POLICIES[stage]

    def run(job_id: str) -> str | None:
        # The policy is read at each call, so an operator (or a test) can tune it in place.
        policy_now = STAGE_POLICIES[stage][0]
        return run_stage(
            current(settings), job_id, stage, work, policy=policy_now, on_cancel=stage_io.delete_job_points
        )

    run.__name__ = actor_for(stage, lane)
    run.__doc__ = f"Run the {stage} stage of a job ({lane} lane)."
    return dramatiq.actor(
        run,
        actor_name=actor_for(stage, lane),
        queue_name=queue_for(stage, lane),
        priority=LANE_PRIORITY.get(lane, 0),
        max_retries=policy.max_retries,
        min_backoff=policy.min_backoff_ms,
        max_backoff=policy.max_backoff_ms,
        time_limit=time_limit_ms,
    )


WORK: dict[str, StageWork] = {
    "validate": stage_io.validate,
    "extract": stage_io.extract,
    "ocr": page_ranges.ocr,
    "chunk": stage_io.chunk,
    "embed": stage_io.embed,
    "index": stage_io.index,
    "finalize": stage_io.finalize,
    "delete": deletion.delete_document,
    "metadata": metadata.apply_metadata,
}


def _range_actor(lane: str) -> Any:
    """The actor that reads one page range of a large scan (see page_ranges.py); the OCR stage's
    retries and time limit apply to each range."""
    settings = get_settings()
    policy, time_limit_ms = STAGE_POLICIES["ocr"]

    def run(job_id: str, part: int) -> None:
        page_ranges.run_range(
            current(settings),
            job_id,
            part,
            policy=STAGE_POLICIES["ocr"][0],
            on_cancel=stage_io.delete_job_points,
        )

    run.__name__ = part_actor_for("ocr", lane)
    run.__doc__ = f"Read one page range of a job's OCR ({lane} lane)."
    return dramatiq.actor(
        run,
        actor_name=part_actor_for("ocr", lane),
        queue_name=queue_for("ocr", lane),
        priority=LANE_PRIORITY.get(lane, 0),
        max_retries=policy.max_retries,
        min_backoff=policy.min_backoff_ms,
        max_backoff=policy.max_backoff_ms,
        time_limit=time_limit_ms,
    )


ACTORS = (
    *(
        _stage_actor(stage, work, lane)
        for lane in LANES
        for stage, work in WORK.items()
        if not (lane == "bulk" and stage in ("delete", "metadata"))
    ),
    *(_range_actor(lane) for lane in LANES),
    webhooks.deliver_webhook,
)


def declare_on(broker: Broker) -> None:
    """Declare every actor on another broker too (tests that drive a second broker in-process)."""
    for actor in ACTORS:
        broker.declare_actor(actor)
