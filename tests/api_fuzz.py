"""Property-based fuzzing of the whole API from its own OpenAPI document, shared by the bounded test
(tests/gateway/test_api_schema.py) and the long randomized run (`make fuzz`, `python -m tests.api_fuzz`).

Every operation is called with a tenant key and with an admin key, with requests that fit the document
and requests that do not, and each answer is checked: no 5xx; status code, content type and body as
documented; errors as problem+json with a `code`; and no answer to the fuzzing tenant carries an id of
the other tenant. In a share of the calls the other tenant's document and job stand in for the generated
ids in the path, and in another the fuzzing tenant's own (its job failed, so its event stream is short).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import tempfile
import time
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, Phase, Verbosity, given
from hypothesis import settings as hypothesis_settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.core.failures import FailureGroup
from schemathesis.openapi.checks import RejectedPositiveData

from shared.settings import Settings

# Refusals of requests the document allows that only the data can explain, by operation: the
# embedding models a reindex may name, and the dimensions each offers, are the service's embedders',
# which the document does not list (any other refusal of schema-valid data is a failure).
SEMANTIC_REFUSALS = {("POST", "/v1/admin/tenants/{tenant_id}/reindex"): {"invalid_embedding_model"}}
ROLES = ("tenant", "admin")
MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
PATH_PARAMETER = re.compile(r"{(\w+)}")


@dataclass
class Tally:
    """What a run saw: requests made and each kind of failure, one line per failing request."""

    requests: int = 0
    server_errors: list[str] = field(default_factory=list)
    schema_violations: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)

    @property
    def failures(self) -> list[str]:
        return self.server_errors + self.schema_violations + self.leaks

    def counts(self) -> str:
        return (
            f"requests={self.requests} server_errors={len(self.server_errors)} "
            f"schema_violations={len(self.schema_violations)} cross_tenant_leaks={len(self.leaks)}"
        )


@dataclass(frozen=True)
class Target:
    """The served document, a key per role, and the other tenant's ids the fuzzing tenant must not see."""

    schema: Any
    keys: dict[str, str]
    foreign_ids: dict[str, str]
    own_ids: dict[str, str]


def pdf_files() -> Any:
    """The files the upload's `file` parts are drawn from: small PDFs of generated words, the media type
    the document gives them (a file that is no PDF is refused as 415 `not_a_pdf`, which the document
    cannot state as a schema, and is tested on its own)."""
    from hypothesis import strategies as st

    from tests.support.pdfs import text_pdf

    words = st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12), min_size=1)
    return words.map(lambda drawn: text_pdf([" ".join(drawn)]))


def fuzz_settings(data_dir: Path, database_url: str = "") -> Settings:
    """Embedded-topology settings on `database_url` (empty: the embedded SQLite file), whose event
    streams end within about a second, so no generated request waits out a stream's lifetime."""
    from tests.conftest import MODEL_CACHE_DIR
    from tests.shared.embedders.fakes import FAKE_EMBEDDER

    return Settings(
        data_dir=str(data_dir),
        database_url=database_url,
        max_upload_mb=1,
        model_cache_dir=MODEL_CACHE_DIR,
        embedder=FAKE_EMBEDDER,
        events_max_s=1,
        events_poll_s=0.1,
        webhook_allow_http=True,
        webhook_allow_private=True,
    )


def build_target(app_settings: Settings) -> Target:
    """The gateway as the embedded process builds it, a fuzzing tenant, an admin, and another tenant
    with a document and a job of its own."""
    from qdrant_client import QdrantClient

    from gateway.app import create_app
    from shared import jobs
    from shared.embedders import make_embedder
    from shared.errors import PermanentError
    from shared.queue import Publisher, make_broker
    from shared.tenants import create_tenant
    from shared.vectorstores import QdrantClientStore
    from tests.conftest import admin_key, tenant_key
    from tests.support.databases import migrate_database

    migrate_database(app_settings.effective_database_url)
    app = create_app(
        app_settings,
        publisher=Publisher(make_broker(app_settings)),
        vectors=QdrantClientStore(QdrantClient(":memory:"), prefix="chunks", server=False),
        embedder=make_embedder(app_settings),
    )
    keys = {"tenant": tenant_key(app, "fuzz"), "admin": admin_key(app)}
    with app.extensions["ingest"].db.transaction() as session:
        other, other_key = create_tenant(session, "other")
        other_id = str(other.id)
    foreign = {"tenant_id": other_id, **_upload(app, other_key, "The other tenant's page.")}
    own = _upload(app, keys["tenant"], "The fuzzing tenant's page.")
    # A final job, so that its event stream ends once its events are sent.
    with app.extensions["ingest"].db.transaction() as session:
        jobs.fail(session, own["job_id"], PermanentError("Failed for the fuzz.", code="fuzz"))
    schemathesis.openapi.format("binary", pdf_files())
    return Target(schemathesis.openapi.from_wsgi("/openapi.json", app), keys, foreign, own)


def _upload(app: Any, key: str, text: str) -> dict[str, str]:
    from tests.conftest import auth
    from tests.support.pdfs import text_pdf

    upload = app.test_client().post(
        "/v1/documents", headers=auth(key), data={"file": (io.BytesIO(text_pdf([text])), "page.pdf")}
    )
    body = upload.get_json()
    assert upload.status_code == 202, body
    return {"document_id": body["document_id"], "job_id": body["job_id"]}


def _problem_fault(status: int, headers: dict[str, list[str]], content: bytes) -> str | None:
    if status < 400:
        return None
    media_type = (headers.get("content-type") or [""])[0].split(";")[0].strip()
    if media_type != "application/problem+json":
        return f"error {status} as {media_type or 'no content type'}, not application/problem+json"
    try:
        body = json.loads(content)
    except ValueError:
        return f"error {status} whose body is not JSON"
    if not isinstance(body, dict) or not isinstance(body.get("code"), str) or not body["code"]:
        return f"error {status} without a `code`"
    return None


def _code_of(content: bytes) -> str | None:
    with suppress(ValueError, AttributeError):
        return json.loads(content).get("code")  # type: ignore[no-any-return]
    return None


def check_case(target: Target, case: Any, role: str, tally: Tally) -> None:
    """Send one generated request with the role's key and file each failure of its answer. A request
    whose generated flaw is a missing Authorization header goes without the key, so that the flaw
    reaches the server (with the key put back, its 200 would read as a flaw accepted)."""
    from tests.conftest import auth

    sent = {name.lower() for name in case.headers or {}}
    negative = case.meta is not None and case.meta.generation.mode.is_negative
    headers = {} if negative and "authorization" not in sent else auth(target.keys[role])
    where = f"[{role}] {case.method} {case.formatted_path}"
    tally.requests += 1
    try:
        response = case.call(headers=headers)
    except Exception as exc:  # an exception out of the app is a 500 its client would see
        tally.server_errors.append(f"{where}: {type(exc).__name__}: {exc}")
        return
    tally.statuses[response.status_code] += 1
    if response.status_code >= 500:
        tally.server_errors.append(f"{where}: {response.status_code} {response.content[:300]!r}")
        return
    try:  # every check schemathesis has, positive-data acceptance and negative-data rejection included
        case.validate_response(response, headers=headers)
    except FailureGroup as group:
        allowed = SEMANTIC_REFUSALS.get((case.method.upper(), case.operation.path), set())
        failures = [
            failure
            for failure in group.exceptions
            if not (isinstance(failure, RejectedPositiveData) and _code_of(response.content) in allowed)
        ]
        if failures:
            tally.schema_violations.append(f"{where}: {str(group).strip()[:1500]}")
    fault = _problem_fault(response.status_code, response.headers, response.content)
    if fault:
        tally.schema_violations.append(f"{where}: {fault}")
    if role == "tenant":
        text = response.content.decode("utf-8", "replace")
        seen = sorted(name for name, value in target.foreign_ids.items() if value in text)
        if seen:
            tally.leaks.append(f"{where}: the other tenant's {', '.join(seen)} in {text[:300]!r}")


def run(target: Target, *, examples: int, derandomize: bool, tally: Tally | None = None) -> Tally:
    """Fuzz every operation: per role and generation mode `examples` requests drawn from its own schema,
    and as many again with the other tenant's ids in its path, and with the fuzzing tenant's own, when it
    takes one."""
    tally = tally or Tally()
    operations = [result.ok() for result in target.schema.get_all_operations()]
    for operation in operations:
        names = PATH_PARAMETER.findall(operation.path)
        variants = [{n: ids[n] for n in names if n in ids} for ids in (target.foreign_ids, target.own_ids)]
        for role in ROLES:
            for mode in MODES:
                for fixed in [{}, *(v for v in variants if v)]:
                    strategy = operation.as_strategy(generation_mode=mode, path_parameters=fixed or None)
                    _drive(target, strategy, role, tally, examples=examples, derandomize=derandomize)
    return tally


def _drive(
    target: Target, strategy: Any, role: str, tally: Tally, *, examples: int, derandomize: bool
) -> None:
    @given(case=strategy)
    @hypothesis_settings(
        max_examples=examples,
        derandomize=derandomize,
        deadline=None,
        database=None,
        verbosity=Verbosity.quiet,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def one(case: Any) -> None:
        check_case(target, case, role, tally)

    with suppress(Unsatisfiable):  # nothing to negate in an operation without parameters
        one()


def main(argv: list[str] | None = None) -> int:
    """`make fuzz`: randomized rounds on each database until each has had `--requests` requests."""
    from tests.conftest import TEST_DATABASE_URL
    from tests.support.databases import fuzz_database

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=10_000, help="at least this many per database")
    parser.add_argument("--examples", type=int, default=60, help="per operation, role and mode in a round")
    parser.add_argument("--databases", default="sqlite,postgres")
    args = parser.parse_args(argv)
    tallies: dict[str, Tally] = {}
    for kind in args.databases.split(","):
        started = time.monotonic()
        with (
            tempfile.TemporaryDirectory(prefix="ingest-fuzz-") as folder,
            fuzz_database(kind, TEST_DATABASE_URL) as url,
        ):
            target = build_target(fuzz_settings(Path(folder) / "data", url))
            tally = tallies[kind] = Tally()
            while tally.requests < args.requests:
                run(target, examples=args.examples, derandomize=False, tally=tally)
        print(f"{kind}: {tally.counts()} in {time.monotonic() - started:.0f} s", flush=True)
        print(f"  statuses: {dict(sorted(tally.statuses.items()))}", flush=True)
        for line in tally.failures:
            print(f"  {line}", flush=True)
    print(
        "total: "
        + Tally(
            requests=sum(t.requests for t in tallies.values()),
            server_errors=[f for t in tallies.values() for f in t.server_errors],
            schema_violations=[f for t in tallies.values() for f in t.schema_violations],
            leaks=[f for t in tallies.values() for f in t.leaks],
        ).counts()
    )
    return 1 if any(t.failures for t in tallies.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
