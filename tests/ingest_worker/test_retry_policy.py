"""Backoff: capped exponential growth with full jitter, and a provider's Retry-After as a floor."""

from __future__ import annotations

import random
import statistics

from ingest_worker.retry_policy import MAX_RETRY_AFTER_MS, backoff_ms

MIN_MS, MAX_MS = 1_000, 60_000


def draws(retries: int, n: int = 2000, **kwargs: float) -> list[int]:
    rng = random.Random(retries)
    return [backoff_ms(retries, min_ms=MIN_MS, max_ms=MAX_MS, rng=rng, **kwargs) for _ in range(n)]


def test_delays_grow_exponentially_until_the_cap() -> None:
    medians = [statistics.median(draws(r)) for r in range(8)]
    assert medians[0] < medians[1] < medians[2] < medians[3] < medians[4]
    # From 2**6 * 1 s the cap of 60 s applies: the spread stops growing
    assert all(max(draws(r)) <= MAX_MS for r in range(12))
    assert abs(medians[7] - medians[6]) < 0.1 * medians[6]


def test_delays_are_fully_jittered() -> None:
    sample = draws(5)  # ceiling 32 s
    assert min(sample) >= MIN_MS / 2 and max(sample) <= 32_000
    # Spread over the whole range, not clustered near the ceiling as with a 1-2x jitter
    assert statistics.pstdev(sample) > 0.2 * 32_000
    assert sum(d < 16_000 for d in sample) > 0.4 * len(sample)


def test_retry_after_is_a_floor_and_is_bounded() -> None:
    assert min(draws(0, retry_after_s=30)) == 30_000
    assert min(draws(6, retry_after_s=30)) >= 30_000
    assert max(draws(0, retry_after_s=10 * 3600)) == MAX_RETRY_AFTER_MS
