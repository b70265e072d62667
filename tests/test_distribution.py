"""The suite's spreading over xdist workers (tests/support/distribution.py): one unit per module, one for
modules that share a cache, and the units holding slow tests handed out first."""

from __future__ import annotations

import pytest

from tests.support.distribution import unit


def test_a_module_is_its_own_unit_unless_it_shares_a_cache() -> None:
    # Given tests' node ids, then each belongs to its module's unit, or to the unit of the cache it shares
    assert unit("tests/shared/test_jobs.py::test_a[postgres]") == "tests/shared/test_jobs.py"
    assert unit("tests/ingest_worker/stages/test_retrieval_real.py::test_x") == "real-documents"
    assert unit("tests/ingest_worker/stages/test_real_documents.py::test_y") == "real-documents"


def test_the_run_lists_every_slow_unit_before_the_others(request: pytest.FixtureRequest) -> None:
    # Given this run's tests in the order they are handed out
    items = request.session.items
    slow_units = {unit(item.nodeid) for item in items if item.get_closest_marker("slow") is not None}
    slow = [unit(item.nodeid) in slow_units for item in items]
    # Then no test of a unit without a slow test comes before one with, and each unit's tests are together
    assert slow == sorted(slow, reverse=True)
    units = [unit(item.nodeid) for item in items]
    assert len(set(units)) == len([u for n, u in enumerate(units) if n == 0 or units[n - 1] != u])
