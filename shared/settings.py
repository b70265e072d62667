"""One frozen settings object, built from `INGEST_*` environment variables at each entry point."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.settings_derived import DerivedSettings
from shared.settings_env import PREFIX, env_of, values_from_env


@dataclass(frozen=True)
class Settings(DerivedSettings):
    """Every knob of the service. Defaults are the embedded topology (one machine, nothing to install).

    Each field is read from `INGEST_<FIELD NAME IN UPPER CASE>`; names carry their units.
    """

    # State and messages: the data folder, the database and the broker.

    # Where the embedded topology keeps its files (SQLite, objects, Qdrant folder).
    data_dir: str = "var"
    # SQLAlchemy URL; empty means a SQLite file in data_dir.
    database_url: str = ""
    # Broker URL: empty means the in-process broker (embedded), redis://... or amqp://...
    broker_url: str = ""
    # How long a publish may wait for the broker before the outbox keeps the message for later.
    broker_timeout_s: float = 2.0
    # Prefix of the broker's keys and queues, so several deployments can share one Redis.
    broker_namespace: str = "dramatiq"
    # Redis broker: seconds without a heartbeat after which a dead worker's messages are requeued.
    redis_heartbeat_timeout_s: int = 15
    # Chance (of 1,000,000) that a Redis fetch runs the maintenance that requeues a dead worker's
    # messages; Dramatiq's 1,000 takes minutes, 2% left a tail of over a minute.
    redis_maintenance_chance: int = 100_000
    # Longest pause of an idle Redis consumer between polls: how long a stage handed on may wait.
    redis_poll_max_ms: int = 1000
    # Redis of the per-tenant cap's slots when the broker is not Redis (RabbitMQ); empty: the broker's.
    tenant_slots_redis_url: str = ""
    # RabbitMQ: longest a delay is held unacknowledged (longer ones go in hops), under consumer_timeout.
    rabbitmq_max_hold_s: int = 600

    # Object storage (uploads and stage artifacts).

    # "local" (a directory) or "s3" (any S3 API server through boto3).
    storage_backend: str = "local"
    # Directory of the local object store; empty means data_dir/objects.
    storage_dir: str = ""
    # URL of the S3 API server (AWS S3, MinIO, SeaweedFS); empty means AWS's own endpoint.
    s3_endpoint_url: str = ""
    # Bucket that holds uploads and stage artifacts.
    s3_bucket: str = "ingest"
    # Region named in S3 requests.
    s3_region: str = "us-east-1"
    # S3 credentials; empty leaves them to boto3's usual chain (environment, files, instance role).
    s3_access_key_id: str = ""
    # The secret of the S3 credentials (never logged).
    s3_secret_access_key: str = field(default="", repr=False)

    # Vector store (Qdrant).

    # Qdrant server URL; empty means the embedded store (embedded_vector_store; one process owns its folder).
    qdrant_url: str = ""
    # API key of the Qdrant server (never logged).
    qdrant_api_key: str = field(default="", repr=False)
    # Folder of Qdrant local mode (and of the data the embedded store migrates); empty means data_dir/qdrant.
    qdrant_path: str = ""
    # Collections are named from this prefix, the embedding model and its dimension.
    qdrant_collection_prefix: str = "chunks"
    # Store without a Qdrant URL: "edge" (the Qdrant engine in-process, data_dir/vectors/edge) or "local".
    embedded_vector_store: str = "edge"

    # Embeddings.

    # "local" (offline all-MiniLM-L6-v2 on onnxruntime), "openai", or "package.module:Class" for an
    # embedder of your own: a class with `from_settings(settings)` and the Embedder protocol (the test
    # suite uses it for its deterministic fake).
    embedder: str = "local"
    # Chunks sent to the embedder in one batch.
    embed_batch_size: int = 32
    # Tries of one embedding batch before the embed stage fails (and is retried whole by its policy):
    # a provider failing now and then must not make a long document's many batches all-or-nothing.
    embed_batch_attempts: int = 4
    # How often at most a long stage (OCR, embedding) writes its progress within it (`job.progress`).
    progress_interval_s: float = 1.0
    # onnxruntime threads of the local embedder in each process (its default would take every core).
    embed_threads: int = 1
    # Folder where the offline embedder's ONNX graph is built once; empty means data_dir/models.
    model_cache_dir: str = ""
    # API key of the OpenAI embedder (never logged).
    openai_api_key: str = field(default="", repr=False)
    # Base URL of an OpenAI-compatible server; empty means OpenAI's own.
    openai_base_url: str = ""
    # Embedding model of the OpenAI embedder.
    openai_model: str = "text-embedding-3-small"
    # Dimension asked of a model that can shorten its vectors; 0 means the model's own.
    openai_dimensions: int = 0
    # The model's window in tokens; 0 takes the known window of an OpenAI model (required for others).
    openai_max_tokens: int = 0
    # Most inputs in one request: OpenAI allows 2048; compatible servers may allow less.
    openai_max_inputs_per_request: int = 2048
    # Most tokens in one request: OpenAI allows 300k; compatible servers may allow less. Tokens are
    # counted offline with cl100k_base.
    openai_max_tokens_per_request: int = 300_000
    # Time limit of one request to the embedding provider.
    openai_timeout_s: float = 60.0

    # Uploads, documents and quotas (defaults; each tenant may have its own).

    # Largest upload; the whole request is bounded by it (per tenant).
    max_upload_mb: int = 100
    # Most pages a document may have; more fails the job `too_many_pages` (per tenant).
    max_pages: int = 2000
    # Most files in one upload request.
    max_files_per_request: int = 20
    # Unfinished jobs a tenant may have before uploads answer 429 (per tenant).
    max_active_jobs: int = 100
    # Bytes a tenant may keep stored (per tenant); 0 means no limit.
    max_storage_mb: int = 0
    # The Retry-After of a 429 answer.
    quota_retry_after_s: int = 10

    # Processing.

    # Largest chunk, counted with the embedder's tokenizer (capped by the model's window).
    chunk_max_tokens: int = 256
    # Tokens a chunk repeats from the end of the one before it.
    chunk_overlap_tokens: int = 32
    # Resolution at which pages are rendered for OCR.
    ocr_dpi: int = 300
    # OCR languages when neither upload nor tenant names any: "eng", or "deu+eng" (likeliest first).
    ocr_languages: str = "eng"
    # The languages uploads and tenants may name (tesseract codes): the packs the Makefile and the
    # Dockerfile install. The gateway checks requests against it; workers check each is installed.
    ocr_available_languages: str = "eng,deu,fra,spa,ita,por"
    # Confidence (0-100) a word read by OCR needs to be kept. Printed text reads at 93-96 with the
    # "fast" models; the letter-like blobs of a photographed texture mostly below 30, 10% above 55.
    ocr_min_word_confidence_pct: float = 60.0
    # Share of a line's characters its confident words must hold for the line to be kept: a lucky
    # word amid a line of noise goes, a line of text loses at most a smudged word or two.
    ocr_min_line_confident_pct: float = 60.0
    # Letters and digits the confident words of a line must hold for the line to be kept: the crumbs
    # tesseract reads with confidence in a picture ("4", "ed", "e @", "wet") sit one or two to a line.
    ocr_min_line_chars: int = 5
    # Confident words a page needs, in kept lines, to yield any text; fewer and it counts as a picture
    # (jobs' `ocr_pages_dropped`). The line rules above already drop every crumb of the pictures
    # measured; this is a margin that still keeps a title page of two words.
    ocr_min_page_words: int = 2
    # Time limit of OCR per page.
    ocr_timeout_s: int = 120
    # Threads each tesseract process may use: 1 is 4-5x faster per page on a busy worker.
    ocr_threads: int = 1
    # Tesseract processes one OCR stage runs at once (each on one core).
    ocr_parallelism: int = 2
    # More pages than this to OCR are read in ranges of this many, one message each (0: never split).
    ocr_range_pages: int = 8
    # A page with fewer characters of text layer than this is read by OCR.
    ocr_min_chars_per_page: int = 20
    # A whole job may run (retries included) this long plus job_deadline_per_page_s per page, then
    # fails `timeout`.
    job_deadline_base_s: int = 1800
    # What each page adds to a job's deadline.
    job_deadline_per_page_s: int = 30
    # Messages of one tenant processed at once across every worker (0: no cap).
    tenant_max_concurrency: int = 2
    # Reindex (bulk) messages processed at once across every worker (0: no cap), to leave uploads some.
    bulk_max_concurrency: int = 1
    # Unfinished jobs of one reindex at once: the maintenance loop creates the next ones as these end.
    reindex_window: int = 8
    # A tenant's jobs beyond this many unfinished ones go to the backlog lane (0: never).
    interactive_jobs_per_tenant: int = 4
    # Recovery (ingest_worker/sweeper.py).

    # A running stage holds a lease on its job this long, renewed while its worker lives; a job
    # whose lease expired is resumed from its first unfinished stage.
    lease_s: int = 30
    # A job whose finished stage was not handed on to the next within this long is resumed.
    handoff_stall_s: int = 30
    # A job that waited for a message this long without progress is published again.
    requeue_after_s: int = 3600
    # Resumptions after a lost worker or hand-off before the job is dead-lettered `worker_lost`.
    max_recoveries: int = 3
    # Time limit of the child process that parses or renders a PDF (validate, extract; OCR gets
    # this plus ocr_timeout_s per page). Past it the child is killed, not the worker.
    parse_timeout_s: int = 120
    # Address-space limit of that child process.
    parse_memory_mb: int = 1536

    # Webhooks (shared/webhooks/callback_urls.py, ingest_worker/webhooks/). Callback URLs must be https
    # and resolve to public addresses, unless the settings below allow more.

    # Accept http:// callback URLs.
    webhook_allow_http: bool = False
    # Accept callback URLs that resolve to loopback, private, link-local or reserved addresses.
    webhook_allow_private: bool = False
    # Hosts and CIDRs allowed whatever they resolve to, comma-separated: "hooks.internal, 10.1.0.0/16".
    webhook_allowed_hosts: str = ""
    # Time to connect to a receiver, per attempt.
    webhook_connect_timeout_s: float = 3.0
    # Time a receiver has to answer, per attempt.
    webhook_timeout_s: float = 10.0
    # Attempts per delivery, spaced by capped exponential backoff with full jitter (hours in all).
    webhook_max_attempts: int = 15
    # The first retry waits between half this and this; the ceiling doubles with each attempt.
    webhook_min_backoff_s: float = 5.0
    # Longest wait between two attempts.
    webhook_max_backoff_s: float = 3600.0
    # At most one progress event per job and endpoint this often (0: every one; other events: always).
    webhook_progress_interval_s: float = 2.0
    # A delivery handed to the broker but not attempted after this long is published again.
    webhook_republish_after_s: int = 300
    # After a secret rotation the previous secret signs too, for this long.
    webhook_secret_overlap_h: float = 24.0
    # How often the event stream (GET /v1/jobs/<id>/events) reads new events.
    events_poll_s: float = 0.5
    # How long one event stream lasts; the client then reconnects and resumes.
    events_max_s: int = 600
    # Event streams a tenant may hold open at once, across gateway processes; one more is a 429.
    events_max_streams_per_tenant: int = 4

    # Processes.

    # Address the gateway listens on.
    host: str = "127.0.0.1"
    # Port the gateway listens on (`make run PORT=...`).
    port: int = 8000
    # Stage threads of the embedded process, and of each process of the ingest and bulk pools.
    worker_threads: int = 2
    # Threads that deliver webhooks: in the embedded process (beside the stage threads), and in the
    # production webhooks pool.
    webhook_worker_threads: int = 2
    # How often the maintenance loop runs (outbox, sweeper, webhooks, reindex flips).
    maintenance_interval_s: float = 2.0
    # Log level of every process.
    log_level: str = "INFO"
    # One JSON object per log line, carrying job_id, tenant_id and message_id.
    log_json: bool = False

    # The production process layout (deploy/topology.py): gunicorn serves the gateway, one `dramatiq`
    # pool each family of queues. Without a Qdrant URL the index pool is always 1 process x 1 thread.

    # Gunicorn worker processes of the gateway.
    gateway_workers: int = 2
    # Threads of a gateway process if its gunicorn workers are gthread (the default gevent: greenlets).
    gateway_threads: int = 4
    # Gunicorn's timeout for a silent worker.
    gateway_timeout_s: int = 120
    # Time gunicorn gives running requests after SIGTERM.
    gateway_graceful_timeout_s: int = 30
    # Processes of the ingest pool (worker-ingest: ingest, ocr and their backlog lanes); the bulk and
    # webhooks pools run one process each.
    worker_processes: int = 2
    # Processes of the index pool, with a Qdrant server.
    index_worker_processes: int = 1
    # Threads of each index pool process, with a Qdrant server.
    index_worker_threads: int = 1
    # Messages each worker process holds ahead of its threads (0: Dramatiq's default, twice the threads).
    worker_prefetch: int = 0
    # Prometheus: port of a worker pool's exposition server (0: none; each pool on a host counts up).
    metrics_port: int = 0
    # Prometheus: the folder of the multiprocess metric files (empty: data_dir/metrics).
    metrics_dir: str = ""
    # Prometheus: the bearer token GET /metrics of the gateway requires (empty: open to anyone who
    # reaches the gateway; set it wherever the gateway is reachable beyond localhost).
    metrics_token: str = field(default="", repr=False)

    # The embedded topology (`make run`).

    # Name of the demo tenant `make run` creates when there is none; its key is kept in
    # data_dir/demo-api-key.
    demo_tenant: str = "demo"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Build settings from `INGEST_*` variables; keyword overrides win (tests, entry points)."""
        values = values_from_env(cls, os.environ if environ is None else environ)
        return cls(**{**values, **overrides})

    def export_child_environment(self) -> None:
        """Set the variables that subprocesses (tesseract) read; an operator's own value wins."""
        os.environ.setdefault("OMP_THREAD_LIMIT", str(self.ocr_threads))

    def to_env(self, *, every_field: bool = False) -> dict[str, str]:
        """The variables that rebuild these settings elsewhere; `from_env(s.to_env()) == s`."""
        return env_of(self, every_field=every_field)

    def replace(self, **changes: Any) -> Settings:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


def child_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without its `INGEST_*` variables, plus `extra`: what a child
    process of the production topology starts with (PATH and the like are inherited)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(PREFIX)}
    env.update(extra)
    return env
