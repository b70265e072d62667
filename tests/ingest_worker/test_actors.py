"""The actors bind work to the declared pipeline (shared/pipeline.py): one actor per stage and lane,
with the retries, backoff and time limit the declaration gives that stage."""

from __future__ import annotations

import ingest_worker.actors as actors
from shared.pipeline import STAGE
from shared.queue import LANES, actor_for


def test_every_declared_stage_has_its_work_and_its_declared_policy_on_every_lane() -> None:
    assert set(actors.WORK) == set(STAGE)
    declared = {actor.actor_name: actor for actor in actors.ACTORS}
    for name, stage in STAGE.items():
        lanes = ("interactive",) if name in ("delete", "metadata") else LANES
        for lane in lanes:
            options = declared[actor_for(name, lane)].options
            retry = stage.retry
            assert options["max_retries"] == retry.retries
            assert (options["min_backoff"], options["max_backoff"]) == tuple(
                int(s * 1000) for s in retry.backoff_s
            )
            assert options["time_limit"] == retry.time_limit_s * 1000
