"""One Dramatiq actor per stage: job id in, job id handed on through the pipeline.

The broker (with its middleware) is set up before any actor is declared. Retries, time limits
and queues are set per actor here, not left at Dramatiq's defaults (20 retries over days and a
10-minute limit are wrong for this work).
"""

from __future__ import annotations

from typing import Any

import dramatiq

from ingest_worker import deletion, steps
from ingest_worker.broker import get_broker, get_settings
from ingest_worker.resources import current
from ingest_worker.runner import StageWork, run_stage
from shared.queue import ACTOR_FOR_STAGE, QUEUE_FOR_STAGE

get_broker()

MAX_RETRIES = 3
MIN_BACKOFF_MS = 1_000
MAX_BACKOFF_MS = 60_000


def _stage_actor(stage: str, work: StageWork, *, time_limit_s: int | None = None) -> Any:
    settings = get_settings()
    limit_ms = 1000 * (time_limit_s or settings.stage_time_limit_s)

    def run(job_id: str) -> str | None:
        return run_stage(
            current(settings),
            job_id,
            stage,
            work,
            max_retries=MAX_RETRIES,
            on_cancel=steps.delete_job_points,
        )

    run.__name__ = ACTOR_FOR_STAGE[stage]
    run.__doc__ = f"Run the {stage} stage of a job."
    return dramatiq.actor(
        run,
        actor_name=ACTOR_FOR_STAGE[stage],
        queue_name=QUEUE_FOR_STAGE[stage],
        max_retries=MAX_RETRIES,
        min_backoff=MIN_BACKOFF_MS,
        max_backoff=MAX_BACKOFF_MS,
        time_limit=limit_ms,
    )


validate_document = _stage_actor("validate", steps.validate)
extract_text = _stage_actor("extract", steps.extract)
ocr_pages = _stage_actor("ocr", steps.ocr)
chunk_text = _stage_actor("chunk", steps.chunk)
embed_chunks = _stage_actor("embed", steps.embed)
index_chunks = _stage_actor("index", steps.index)
finalize_job = _stage_actor("finalize", steps.finalize)
delete_document = _stage_actor("delete", deletion.delete_document)
