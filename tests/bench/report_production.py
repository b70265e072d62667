"""The production-topology benchmarks as Markdown, each beside the target it is held to."""

from __future__ import annotations

import statistics

from tests.bench import accept_backlog, accept_path, efficiency, hops, recovery, worker_memory
from tests.bench.upload_memory import UploadMemory

# The targets of the benchmark issue.
ACCEPT_SHARE = 0.5  # of the raw loop's throughput
OVERHEAD_ONE_PROCESS = 1.10  # at most this many times the raw run's time with one worker process
SPEEDUP_TWO_PROCESSES = 1.7  # at least this many times the raw run's throughput with two
IDLE_HOP_MS = 50.0
MEMORY_RATIO = 1.2
MEMORY_CAP_MB = 1536.0
GATEWAY_FLAT_MB = 50.0  # what "flat" allows the gateway to grow during a 200 MB upload

CLUSTER = (
    "a private PostgreSQL, Redis and S3 server (`weed mini`), the gunicorn gateway, the `dramatiq` pools "
    "of `make worker` and the maintenance loop as separate processes (tests/chaos/cluster.py)"
)


def _verdict(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def accept_section(result: accept_path.AcceptPath) -> str:
    shares = [s.per_s / r.per_s for s, r in zip(result.service, result.raw, strict=True)]
    return (
        "## Accept path\n\n"
        f"`tests/bench/accept_path.py`: uploads of distinct {result.pdf_bytes / 1024 / 1024:.0f} MB PDFs to "
        "the gunicorn gateway (the deploy defaults: 2 gevent workers) on a private PostgreSQL, Redis and S3 "
        "server (`weed mini`), with no worker consuming, after a few uploads to warm it up; beside a raw "
        "loop doing an accepted upload's three operations with the same number of client threads: "
        "`put_object` with boto3, the document, job, event and outbox rows with SQLAlchemy, a message "
        "pushed on a Redis list. CPU per upload: the whole machine's (shared, so noisy), the run's own "
        "processes' (clients, gateway, servers) and the gateway's.\n\n"
        + "\n".join([accept_path.TABLE_HEADER, *accept_path.table_rows(result)])
        + _backlog_part(result)
        + f"\n\nTarget: at least {ACCEPT_SHARE:.0%} of the raw loop's throughput at every level: "
        f"{_verdict(min(shares) >= ACCEPT_SHARE)} (lowest {min(shares):.0%}). What the gateway adds to "
        "the raw operations: the HTTP request and its multipart parsing (one pass: the file part is hashed "
        "and checked as it streams to storage), the API key lookup, and one transaction (the "
        "tenant share-locked, the duplicate lookup, the rows, the outbox row's claim, the quota counters); "
        "the publish and its mark run after the commit, from a greenlet of their own."
    )


def _backlog_part(result: accept_path.AcceptPath) -> str:
    rows = accept_backlog.backlog_rows(result)
    if not rows or result.empty is None or result.backlogged is None:
        return ""
    share = result.backlogged.per_s / result.empty.per_s
    return (
        f"\n\nAt {accept_path.BACKLOG_CLIENTS} clients, a new tenant beside one with "
        f"{result.backlog_jobs:,} queued jobs (quota and lane read from the tenant's counters):\n\n"
        + "\n".join(rows)
        + f"\n\nTarget: within 10% of the new tenant's throughput: {_verdict(share >= 0.9)} ({share:.0%})."
    )


def efficiency_section(result: efficiency.Efficiency) -> str:
    one, two = result.service_s.get(1), result.service_s.get(2)
    notes = []
    if one:
        overhead = one / result.raw_s
        notes.append(
            f"- One worker process: {overhead:.2f}x the raw run's time (target at most "
            f"{OVERHEAD_ONE_PROCESS:.2f}x): {_verdict(overhead <= OVERHEAD_ONE_PROCESS)}."
        )
    if two:
        speedup = result.raw_s / two
        notes.append(
            f"- Two worker processes: {speedup:.2f}x the raw run's throughput (target at least "
            f"{SPEEDUP_TWO_PROCESSES}x): {_verdict(speedup >= SPEEDUP_TWO_PROCESSES)}. On a 2-core machine "
            "the index pool, the gateway, the maintenance loop and PostgreSQL share the two cores with "
            "them, so two one-core workers cannot both have a core of their own."
        )
    return (
        "## Pipeline efficiency\n\n"
        f"`tests/bench/efficiency.py`: {result.documents} generated PDFs ({result.pages} pages: text, and "
        "300-dpi scans that need OCR), ingested once by a raw sequential loop in one process over the "
        "same libraries and stores (S3, pypdf, pypdfium2 and tesseract, the chunker, the local embedder "
        "on one thread, a local Qdrant folder, PostgreSQL), and by the service with 1 and 2 ingest "
        "worker processes of one thread each (`INGEST_EMBED_THREADS=1`, `INGEST_OCR_PARALLELISM=1`) on "
        f"{CLUSTER}, every document uploaded at once.\n\n"
        + efficiency.table(result)
        + "\n\n"
        + "\n".join(notes)
        + "\n\nWhere the time goes:\n\n"
        + efficiency.where_the_time_goes(result)
    )


def hops_section(results: list[hops.Hops]) -> str:
    default = next((h for h in results if h.poll_ms == 1000), results[0])
    idle_ms = statistics.median(default.idle_s) * 1000
    return (
        "## Stage hops\n\n"
        f"`tests/bench/hops.py`: on {CLUSTER}, with production recovery settings, 2-page text PDFs "
        "embedded by the tests' embeddings server (so stages are short and the hops show): "
        "one at a time (idle), then a burst uploaded at once. A hop: the next stage's `started_at` minus "
        "the previous stage's `finished_at`. An idle Redis consumer polls again after a pause that "
        "doubles up to `INGEST_REDIS_POLL_MAX_MS` (the `dramatiq` command's own bound, `worker_timeout`, "
        "is 1000 ms); a shorter bound shortens the hops a quiet system waits, and costs Redis commands "
        "while there is nothing to do.\n\n"
        + "\n".join([hops.TABLE_HEADER, *(hops.table_row(h) for h in results)])
        + f"\n\nTarget: a median hop under {IDLE_HOP_MS:.0f} ms when idle, with the default bound: "
        f"{_verdict(idle_ms < IDLE_HOP_MS)} ({idle_ms:.0f} ms). The tail (p99) is the bound itself: a "
        "hop to a queue whose consumer has been idle longest waits out its whole pause."
    )


def memory_section(results: list[worker_memory.WorkerMemory], upload: UploadMemory | None) -> str:
    small, large = results[0], results[-1]
    ratio = large.ingest_worker_mb / small.ingest_worker_mb
    peak = max(large.ingest_worker_mb, large.parse_children_mb, large.index_worker_mb)
    text = (
        "## Worker memory\n\n"
        f"`tests/bench/worker_memory.py`: on {CLUSTER}, each document alone with the worker pools started "
        "afresh, so every high-water mark (`VmHWM`) belongs to it; embeddings from the tests' server.\n\n"
        + "\n".join([worker_memory.TABLE_HEADER, *(worker_memory.table_row(m) for m in results)])
        + f"\n\nTarget: the ingest worker's peak on the {large.pages}-page PDF within {MEMORY_RATIO}x of its "
        f"peak on the {small.pages}-page one ({ratio:.2f}x): {_verdict(ratio <= MEMORY_RATIO)}; every "
        f"process under {MEMORY_CAP_MB / 1024:.1f} GB ({peak:.0f} MB at most): "
        f"{_verdict(peak < MEMORY_CAP_MB)}. Parsing runs in the parse children, each capped by "
        "`INGEST_PARSE_MEMORY_MB`."
    )
    if upload is not None:
        text += (
            f"\n\nThe gateway during a {upload.mb} MB upload (see below): it grew {upload.growth_mb:.0f} MB; "
            f"target flat (under {GATEWAY_FLAT_MB:.0f} MB): {_verdict(upload.growth_mb < GATEWAY_FLAT_MB)}."
        )
    return text


def recovery_section(results: list[recovery.Recovery]) -> str:
    return (
        "## Recovery after a worker is killed\n\n"
        f"`tests/bench/recovery.py`: on {CLUSTER}, a 21-page text PDF whose embed stage pauses "
        f"{recovery.PAUSE_S} s once (tests/support/slow_stages.py); the ingest pool is SIGKILLed "
        "(its whole process group) during the pause and started again at once, as a supervisor would. "
        "The hand-off stall follows the lease; the maintenance loop runs every 2 s (0.5 s with the short "
        "lease).\n\n"
        + "\n".join([recovery.TABLE_HEADER, *(recovery.table_row(r) for r in results)])
        + "\n\nWhat limits it: the lease. The sweeper resumes the job once the dead worker's lease has "
        "expired (renewed every third of it while a worker lives), so recovery takes about one lease "
        "plus a maintenance interval, then the rest of the job."
    )
