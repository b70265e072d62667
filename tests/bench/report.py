"""The benchmark results as Markdown: the machine, each stage alone, end to end, the upload's memory,
fairness between tenants and an upload's latency during a reindex."""

from __future__ import annotations

from dataclasses import dataclass

from shared.queue import STAGES
from tests.bench.fairness import GOAL_RATIO, Fairness
from tests.bench.fairness import TABLE_HEADER as FAIRNESS_HEADER
from tests.bench.fairness import table_row as fairness_row
from tests.bench.pipeline import POLL_INTERVAL_S, EndToEnd
from tests.bench.reindex_latency import TABLE_HEADER as REINDEX_HEADER
from tests.bench.reindex_latency import ReindexLatency
from tests.bench.reindex_latency import table_rows as reindex_rows
from tests.bench.stages import Embedding, Extraction, Ocr
from tests.bench.upload_memory import TABLE_HEADER, UploadMemory, table_row

# Measured earlier on such 2-core machines (ARCHITECTURE.md §10, README "The offline embedder").
REFERENCE_EXTRACTION_PAGES_PER_S = 70.0
REFERENCE_OCR_CPU_S_PER_PAGE = 2.2
REFERENCE_EMBEDDING_CHUNKS_PER_S = {1: 19.0, 2: 37.0}
# Above this one-minute load average at the start, something else was using the CPUs.
BUSY_LOAD = 0.5


@dataclass(frozen=True)
class Results:
    """Everything one `make bench` run measured."""

    date: str
    duration_s: float
    machine: list[tuple[str, str]]
    load: tuple[float, float]  # one-minute load average at the start and at the end
    # The parts a run measured (`make bench BENCH=...` runs some of them).
    pipeline: Pipeline | None = None
    upload: UploadMemory | None = None
    fairness: Fairness | None = None
    reindex: ReindexLatency | None = None
    # Sections of the production-topology parts, already rendered.
    production: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pipeline:
    """The stages on their own and whole documents through the embedded process."""

    extraction: Extraction
    ocr: Ocr
    embeddings: list[Embedding]
    cold: EndToEnd
    text: EndToEnd
    scan: EndToEnd
    reference_floor_s: dict[str, float]  # EndToEnd.name → the earlier end-to-end figure
    worker_threads: int  # of the embedded process
    embed_threads: int  # onnxruntime threads of the embedded process's embedder


def render(results: Results) -> str:
    """The whole report."""
    parts = [
        "# Benchmarks",
        f"Measured by `make bench` (`python -m tests.bench.run`) on {results.date}, in "
        f"{results.duration_s:.0f} s. The reference column holds figures measured earlier on such "
        "machines (ARCHITECTURE.md §10). Numbers move with the machine and with whatever else runs on it: "
        "compare runs made on a quiet machine.",
        _machine(results),
    ]
    if results.pipeline is not None:
        parts += [
            _stages(results.pipeline),
            _end_to_end(results.pipeline),
            _where_the_time_goes(results.pipeline),
        ]
    parts += results.production
    if results.upload is not None:
        parts.append(
            f"## Gateway memory during a {results.upload.mb} MB upload\n\n"
            "`tests/bench/upload_memory.py`: gunicorn (one worker) on SQLite and a local object store, Redis "
            "as the broker with no consumer, the file sent by curl; the worker's resident memory sampled "
            f"every 20 ms.\n\n{TABLE_HEADER}\n{table_row(results.upload)}"
        )
    if results.fairness is not None:
        parts.append(_fairness(results.fairness))
    if results.reindex is not None:
        parts.append(_reindex(results.reindex))
    return "\n\n".join(parts) + "\n"


def _machine(results: Results) -> str:
    start, end = results.load
    rows = [*results.machine, ("load average (1 min), start / end", f"{start:.2f} / {end:.2f}")]
    table = "\n".join(f"| {what} | {value} |" for what, value in rows)
    text = f"## Machine\n\n| | |\n| --- | --- |\n{table}"
    if start > BUSY_LOAD:
        text += (
            f"\n\nThe machine was busy when the run started (load {start:.2f}): "
            "these numbers are pessimistic."
        )
    return text


def _stages(results: Pipeline) -> str:
    x, o = results.extraction, results.ocr
    rows = [
        (
            "extraction",
            f"`extract_pages` (pypdf), {x.pages}-page text PDF, best of 2",
            f"{x.pages_per_s:.0f} pages/s ({x.wall_s:.2f} s)",
            f"~{REFERENCE_EXTRACTION_PAGES_PER_S:.0f} pages/s",
        ),
        (
            "OCR",
            f"`ocr_pages`, {o.pages} pages of a {o.dpi}-dpi scan",
            f"{o.cpu_s_per_page:.2f} CPU-s/page (tesseract {o.tesseract_cpu_s / o.pages:.2f}, rendering "
            f"and image preparation {o.render_cpu_s / o.pages:.2f}); {o.wall_s_per_page:.2f} s/page wall",
            f"~{REFERENCE_OCR_CPU_S_PER_PAGE} CPU-s/page",
        ),
    ]
    for e in results.embeddings:
        rows.append(
            (
                "embedding",
                f"`LocalEmbedder`, {e.chunks} chunks of {e.mean_tokens:.0f} tokens, batches of 32, "
                f"{e.threads} thread{'s' if e.threads > 1 else ''}",
                f"{e.chunks_per_s:.1f} chunks/s",
                f"~{REFERENCE_EMBEDDING_CHUNKS_PER_S.get(e.threads, 0):.0f} chunks/s",
            )
        )
    body = "\n".join(f"| {' | '.join(row)} |" for row in rows)
    return (
        "## Stages on their own\n\nIn the benchmark's own process, one document at a time.\n\n"
        f"| stage | how | measured | reference |\n| --- | --- | --- | --- |\n{body}"
    )


def floor_s(run: EndToEnd, results: Pipeline) -> float:
    """What the stage benchmarks say the document must cost at least: extraction, OCR and embedding."""
    one_thread = next(e for e in results.embeddings if e.threads == 1)
    return (
        run.pages / results.extraction.pages_per_s
        + run.ocr_pages * results.ocr.wall_s_per_page
        + run.chunks / one_thread.chunks_per_s
    )


def _end_to_end(results: Pipeline) -> str:
    labels = {
        results.cold.name: "1-page text PDF, the first job (cold)",
        results.text.name: f"{results.text.pages}-page text PDF",
        results.scan.name: f"{results.scan.pages}-page scan, {results.ocr.dpi} dpi",
    }
    header = (
        "| document | pages | OCR pages | chunks | end to end | "
        + " | ".join(STAGES)
        + " | sum of stages | hop overhead | floor from the stage benchmarks | reference |\n"
        + "| --- " * (len(STAGES) + 9)
        + "|"
    )
    rows = []
    for run in (results.cold, results.text, results.scan):
        reference = results.reference_floor_s.get(run.name)
        rows.append(
            f"| {labels[run.name]} | {run.pages} | {run.ocr_pages} | {run.chunks} | {run.client_s:.2f} s | "
            + " | ".join(f"{run.stages.get(stage, 0.0):.2f}" for stage in STAGES)
            + f" | {run.stages_s:.2f} s | {run.hop_overhead_s:.2f} s | {floor_s(run, results):.1f} s "
            f"| {f'~{reference:.0f} s' if reference else ''} |"
        )
    split_header = (
        "| document | upload → job row | job row → first stage | between stages (6 hops) | "
        "last stage → completion seen | hop overhead |\n| --- | --- | --- | --- | --- | --- |"
    )
    split_rows = [
        f"| {labels[run.name]} | {run.upload_s:.3f} s | {run.queued_s:.3f} s | {run.between_stages_s:.3f} s "
        f"| {run.completion_seen_s:.3f} s | {run.hop_overhead_s:.3f} s |"
        for run in (results.cold, results.text, results.scan)
    ]
    return (
        "## End to end, embedded topology\n\n"
        "The real `deploy/embedded.py` process (waitress, the in-process broker with "
        f"{results.worker_threads} worker threads, SQLite, a local object store, Qdrant in-process, the "
        f"offline embedder with {results.embed_threads} onnxruntime thread(s)) started on a free port; "
        "each document uploaded alone over HTTP and its job polled every "
        f"{POLL_INTERVAL_S * 1000:.0f} ms until `completed`. Stage seconds come from the `job_stages` "
        "rows; the hop overhead is the end-to-end time minus the sum of the stages. The floor adds up "
        "extraction, OCR (wall per page) and embedding (one thread, the default) at the rates measured "
        "above.\n\n"
        + "\n".join([header, *rows])
        + "\n\nThe hop overhead, split:\n\n"
        + "\n".join([split_header, *split_rows])
    )


def _where_the_time_goes(results: Pipeline) -> str:
    text, scan, cold = results.text, results.scan, results.cold
    embed, ocr = text.stages["embed"], scan.stages["ocr"]
    lines = [
        f"- {text.pages}-page text PDF: embedding takes {embed:.1f} s of {text.client_s:.1f} s "
        f"({_share(embed, text.client_s)}), {text.chunks / embed:.1f} chunks/s; extraction "
        f"{text.stages['extract']:.2f} s, chunking {text.stages['chunk']:.2f} s, indexing "
        f"{text.stages['index']:.2f} s.",
        f"- {scan.pages}-page scan: OCR takes {ocr:.1f} s of {scan.client_s:.1f} s "
        f"({_share(ocr, scan.client_s)}), {ocr / max(scan.ocr_pages, 1):.2f} s per page; embedding "
        f"{scan.stages['embed']:.1f} s.",
        f"- Between the stages and around them: {text.hop_overhead_s:.2f} s for the text PDF, "
        f"{scan.hop_overhead_s:.2f} s for the scan, of which up to {POLL_INTERVAL_S * 1000:.0f} ms is the "
        "client's polling.",
        f"- The first job after start-up took {cold.client_s:.2f} s for one page: validate "
        f"{cold.stages['validate']:.2f} s and extract {cold.stages['extract']:.2f} s.",
    ]
    return "## Where the time goes\n\n" + "\n".join(lines)


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "n/a"


def _fairness(result: Fairness) -> str:
    threads, first = result.worker_threads, result.runs[0]
    text = (
        "## Fairness between two tenants\n\n"
        f"`tests/bench/fairness.py`: the gateway and an in-process worker with {threads} threads on the "
        f"Redis broker (polling an idle queue every {result.worker_timeout_ms} ms at most; the `dramatiq` "
        "command of `make worker` waits up to a second), SQLite, a local object store, Qdrant in-process, "
        "and the tests' OpenAI-compatible embeddings server on 127.0.0.1, which answers at once, in place "
        f"of the local embedder. Every document has {result.pages} text pages. For each cap, on a fresh "
        f"service: tenant B uploads alone {len(first.idle_s)} times, then tenant A uploads "
        f"{first.burst_jobs} documents one request after another and B uploads one as soon as A's last "
        "is accepted. Latency: B's upload request → its job's `finished_at`; the goal: B within "
        f"{GOAL_RATIO:g}x of its idle latency. Messages put back: fetched by the worker, then sent back "
        "to their queue for being over their tenant's cap.\n\n"
        + "\n".join([FAIRNESS_HEADER, *(fairness_row(run) for run in result.runs)])
    )
    notes = [
        "- What keeps B from waiting behind A's burst is the backlog lane: A's jobs beyond its first "
        "`INGEST_INTERACTIVE_JOBS_PER_TENANT` unfinished ones run on the `-backlog` queues at a lower "
        "priority, so B's messages are taken before them, with or without a cap."
    ]
    # A cap acts only when more threads than the cap serve a tenant's messages: say so when it did not.
    inert = [run.cap for run in result.runs if run.cap >= threads and run.put_back == 0]
    if inert:
        notes.append(
            f"- With a cap of {', '.join(map(str, inert))} and {threads} worker threads, no message was "
            f"ever over the cap: tenant A cannot hold more than {threads} messages at once anyway. A cap "
            "acts only when the threads serving the queues outnumber it (more worker processes, or a "
            "lower cap)."
        )
    uncapped = next((run for run in result.runs if run.cap == 0), None)
    for run in result.runs:
        if uncapped is not None and 0 < run.cap < threads:
            notes.append(
                f"- A cap of {run.cap} left B a thread ({run.ratio:.1f}x its idle latency), and cost A: "
                f"its burst drained in {run.drained_s:.1f} s instead of {uncapped.drained_s:.1f} s "
                f"without a cap, using {run.cap} of the {threads} threads even when B had nothing "
                f"queued, and {run.put_back} messages were fetched only to be put back."
            )
    return text + ("\n\n" + "\n".join(notes) if notes else "")


def _reindex(result: ReindexLatency) -> str:
    return (
        "## An upload during a reindex\n\n"
        "`tests/bench/reindex_latency.py`: the service wired as `make run` wires it (in-process broker, "
        f"{result.worker_threads} worker threads, the offline embedder, SQLite, Qdrant in-process). Tenant A "
        f"has {result.documents} documents of {result.pages} text pages; tenant B uploads one such document "
        f"at a time, {len(result.idle_s)} times alone, then {len(result.during_s)} times while A's reindex "
        "(every document re-embedded into a new index version) runs, and A uploads one of its own during "
        f"it. At most {result.bulk_max_concurrency} reindex message(s) run at once "
        f"(`INGEST_BULK_MAX_CONCURRENCY`), after any interactive one a worker holds. The reindex took "
        f"{result.reindex_s:.1f} s. Latency: the upload request → its job's `finished_at`.\n\n"
        f"{REINDEX_HEADER}\n{reindex_rows(result)}"
    )
