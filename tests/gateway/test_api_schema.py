"""Property-based API test: requests generated from the served OpenAPI document, with a tenant key and
an admin key, on both databases, never get a 5xx, every answer matches the document, every error is
problem+json with a `code`, and no answer to one tenant carries another tenant's ids.

A bounded, derandomized run of tests/api_fuzz.py; `make fuzz` runs the same checks randomized and long.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import api_fuzz

# Per operation, role and generation mode: about 2,000 requests per database, a few tens of seconds.
EXAMPLES = 10


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    """The embedded topology's SQLite file (""), or this run's PostgreSQL database, emptied."""
    if request.param == "sqlite":
        return ""
    request.getfixturevalue("pg_db")
    return request.getfixturevalue("pg_server_url")  # type: ignore[no-any-return]


def test_generated_requests_get_documented_answers_and_no_other_tenants_ids(
    tmp_path: Path, database_url: str
) -> None:
    # Given the gateway on this database, a fuzzing tenant, an admin, and another tenant's document and job
    target = api_fuzz.build_target(api_fuzz.fuzz_settings(tmp_path / "data", database_url))
    assert len(list(target.schema.get_all_operations())) >= 15

    # When every operation gets requests drawn from its own schema, fitting and not, with either key
    tally = api_fuzz.run(target, examples=EXAMPLES, derandomize=True)

    # Then none was a server error, a departure from the document or a leak
    assert tally.requests >= 1000
    assert not tally.failures, f"{tally.counts()}\n" + "\n".join(tally.failures)
