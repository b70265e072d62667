"""The pipeline, declared once: each kind of job's stages in order, and what each stage is.

Data only, so the gateway (which may not import `ingest_worker`) and the workers read the same
declaration: the message contract (`shared/queue.py`) derives its stage list, actor and queue names
from it, a reindex its entry points, the content endpoints where a stage's artifact is. The workers
bind each stage's work to its name (`ingest_worker/actors.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

# Queue families. OCR has its own, so scans do not wait behind text pages; the index family is served
# by the one process that owns a local Qdrant folder (ARCHITECTURE §2), so every stage that opens the
# vector store (to index, to delete points, to rewrite their payload) runs there.
QUEUE_INGEST = "ingest"
QUEUE_OCR = "ocr"
QUEUE_INDEX = "index"


MINUTE_S = 60


@dataclass(frozen=True)
class Retry:
    """How a failure of a stage is retried (ingest_worker/failures.py): `retries` for a failure of its
    own (a service outage waits longer), with fully jittered backoff between `backoff_s`'s floor and
    cap, and `time_limit_s` for one attempt (Dramatiq's TimeLimit, which cannot stop C code: a parse
    or a page read has its own timeout inside). Parsing a bad file again rarely helps, a provider
    outage often does."""

    retries: int = 2
    backoff_s: tuple[float, float] = (1, 30)
    time_limit_s: int = 5 * MINUTE_S


# The stages that write to the vector store: its outages are worth waiting out.
VECTOR_WRITES = Retry(5, (2, 2 * MINUTE_S), 10 * MINUTE_S)


@dataclass(frozen=True)
class Stage:
    """One stage of a pipeline.

    `actor` is the Dramatiq actor's name, which dead-letter rows and messages in flight hold, so it
    never changes. `writes` is the artifact the stage leaves (a file name under the job's artifacts),
    `reads` the stages whose artifacts it reads. `part_actor` names the actor of one part, for a stage
    that may run in parts. `reindex_from`: a reindex may start at this stage. `retry`: how its
    failures are retried."""

    name: str
    actor: str
    queue: str
    writes: str | None = None
    reads: tuple[str, ...] = ()
    part_actor: str | None = None
    reindex_from: bool = False
    retry: Retry = Retry()


INGEST: tuple[Stage, ...] = (
    Stage("validate", "validate_document", QUEUE_INGEST),
    Stage(
        "extract",
        "extract_text",
        QUEUE_INGEST,
        writes="pages.json",
        reindex_from=True,
        retry=Retry(time_limit_s=10 * MINUTE_S),
    ),
    # Generous: each page has its own timeout inside the stage (or each part, for a large scan).
    Stage(
        "ocr",
        "ocr_pages",
        QUEUE_OCR,
        writes="pages-final.json",
        reads=("extract",),
        part_actor="ocr_range",
        retry=Retry(2, (5, MINUTE_S), 120 * MINUTE_S),
    ),
    Stage("chunk", "chunk_text", QUEUE_INGEST, writes="chunks.json", reads=("ocr",), reindex_from=True),
    # The embedding provider's outages and rate limits are worth waiting out.
    Stage(
        "embed",
        "embed_chunks",
        QUEUE_INGEST,
        writes="vectors.npy",
        reads=("chunk",),
        reindex_from=True,
        retry=Retry(5, (2, 5 * MINUTE_S), 30 * MINUTE_S),
    ),
    Stage(
        "index", "index_chunks", QUEUE_INDEX, reads=("chunk", "embed"), reindex_from=True, retry=VECTOR_WRITES
    ),
    # Finalize may delete the points of a job cancelled after indexing: it opens the vector store.
    Stage("finalize", "finalize_job", QUEUE_INDEX, retry=Retry(5, (1, MINUTE_S), 2 * MINUTE_S)),
)
# The kinds of job and the stages each runs, in order (a reindex job runs the ingest stages; the ones
# it skips are recorded as done when it is created).
PIPELINES: dict[str, tuple[Stage, ...]] = {
    "ingest": INGEST,
    "delete": (Stage("delete", "delete_document", QUEUE_INDEX, retry=VECTOR_WRITES),),
    "metadata": (Stage("metadata", "apply_metadata", QUEUE_INDEX, retry=VECTOR_WRITES),),
}
STAGE: dict[str, Stage] = {stage.name: stage for stages in PIPELINES.values() for stage in stages}
# The stages a reindex may start at (`make reindex FROM=...`), the latest first.
FROM_STAGES: tuple[str, ...] = tuple(stage.name for stage in reversed(INGEST) if stage.reindex_from)


def reused_inputs(stage: str) -> tuple[str, ...]:
    """The ingest stages before `stage` whose artifacts `stage` and the stages after it read: what a
    reindex starting at `stage` must find stored, and the only artifacts it needs."""
    at = [s.name for s in INGEST].index(stage)
    read = {name for later in INGEST[at:] for name in later.reads}
    return tuple(s.name for s in INGEST[:at] if s.name in read)


def artifact_of(stage: str) -> str:
    """The file name of the artifact `stage` writes."""
    name = STAGE[stage].writes
    if name is None:
        raise ValueError(f"stage {stage} writes no artifact")
    return name
