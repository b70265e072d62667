"""`make reindex` (`python -m ingest_worker.cli reindex`): a dry run changes nothing, a start writes the
reindex and its jobs and says so, a cancel keeps the active version, and an unknown tenant is an error;
the progress bar's line."""

from __future__ import annotations

from typing import Any

import pytest

from ingest_worker.reindex.command import bar, cmd_reindex
from shared.db import Database, migrate
from shared.models import Reindex, ReindexStatus
from shared.settings import Settings
from shared.tenants import create_tenant


def _run(settings: Settings, **options: Any) -> int:
    defaults = {"from_stage": "embed", "model": None, "dimension": None, "dry_run": False, "wait": False}
    return cmd_reindex(settings, "acme", **{**defaults, **options})


def _reindexes(settings: Settings) -> list[tuple[str, int, int]]:
    db = Database.from_settings(settings)
    try:
        with db.transaction() as session:
            rows = session.query(Reindex).order_by(Reindex.created_at).all()
            return [(r.status, r.source_version, r.target_version) for r in rows]
    finally:
        db.dispose()


@pytest.fixture
def tenant(settings: Settings) -> Settings:
    migrate(settings.effective_database_url)
    db = Database.from_settings(settings)
    with db.transaction() as session:
        create_tenant(session, "acme")
    db.dispose()
    return settings


def test_a_dry_run_says_what_would_happen_and_changes_nothing(tenant: Settings, capsys: Any) -> None:
    assert _run(tenant, dry_run=True) == 0
    out = capsys.readouterr().out
    assert "tenant acme: version 1 active" in out and "would start a reindex" in out
    assert "dry run: nothing was changed" in out
    assert _reindexes(tenant) == []


def test_a_start_writes_the_reindex_and_a_cancel_keeps_the_active_version(
    tenant: Settings, capsys: Any
) -> None:
    # When a reindex is started without waiting
    assert _run(tenant) == 0
    assert "reindexing tenant acme into version 2" in capsys.readouterr().out
    assert _reindexes(tenant) == [(ReindexStatus.RUNNING.value, 1, 2)]
    # And cancelled
    assert _run(tenant, cancel=True) == 0
    assert "reindex to version 2 cancelled; version 1 stays active" in capsys.readouterr().out
    assert _reindexes(tenant) == [(ReindexStatus.CANCELLED.value, 1, 2)]


def test_an_unknown_tenant_or_model_is_an_error(tenant: Settings, capsys: Any) -> None:
    assert (
        cmd_reindex(
            tenant, "nobody", from_stage="embed", model=None, dimension=None, dry_run=True, wait=False
        )
        == 1
    )
    assert "no tenant 'nobody'" in capsys.readouterr().err
    assert _run(tenant, model="no-such-model", dry_run=True) == 1
    assert "invalid_embedding_model" in capsys.readouterr().err


def test_the_progress_line() -> None:
    line = bar(done=3, failed=1, total=8, elapsed_s=2.0, started_done=0, width=8)
    assert line == "[####....] 3/8 done, 1 failed, 2.0 docs/s, ETA 2s"
    assert bar(0, 0, 0, 0.0, 0, width=4).startswith("[####] 0/0 done")
