"""How long a transient failure waits before its retry: capped exponential backoff, full jitter.

Full jitter (a uniform draw between 0 and the exponential cap) spreads a burst of failures out
better than Dramatiq's own jitter, which keeps every delay within a factor of two. A provider's
Retry-After is a floor: the retry never comes sooner than the provider asked.
"""

from __future__ import annotations

import random

MAX_RETRY_AFTER_MS = 15 * 60 * 1000


def backoff_ms(
    retries: int,
    *,
    min_ms: int,
    max_ms: int,
    retry_after_s: float | None = None,
    rng: random.Random | None = None,
) -> int:
    """The delay before retry number `retries + 1` (retries done so far: `retries`)."""
    draw = (rng or random).uniform
    ceiling = min(max_ms, min_ms * 2 ** min(retries, 32))
    delay = int(draw(min_ms / 2, ceiling))
    if retry_after_s is not None and retry_after_s > 0:
        delay = max(delay, min(int(retry_after_s * 1000), MAX_RETRY_AFTER_MS))
    return delay
