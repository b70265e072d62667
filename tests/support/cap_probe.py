"""Test-only worker plug-in: an actor that counts, in Redis, how many of its messages run at once.

Loaded by the `dramatiq` command of a test (`dramatiq tests.support.cap_probe -Q probe`) on the broker and
middleware the settings build (`ingest_worker.broker.get_broker`), so the per-tenant cap applies.
PROBE_REDIS_URL and PROBE_KEY name the counters: `<key>:now`, `<key>:max` and `<key>:done`.
"""

from __future__ import annotations

import os
import time

import dramatiq
import redis

from ingest_worker.broker import get_broker

PROBE_QUEUE = "probe"
PROBE_S = 0.3
# Raise the high-water mark with the current count, atomically.
BUMP = """
local now = redis.call('INCR', KEYS[1])
if now > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], now) end
return now
"""

_client = redis.Redis.from_url(os.environ.get("PROBE_REDIS_URL", "redis://127.0.0.1:6379/0"))
_key = os.environ.get("PROBE_KEY", "probe")
_bump = _client.register_script(BUMP)


@dramatiq.actor(broker=get_broker(), queue_name=PROBE_QUEUE, max_retries=0)
def probe(n: int) -> None:
    _bump(keys=[f"{_key}:now", f"{_key}:max"])
    try:
        time.sleep(PROBE_S)
    finally:
        _client.decr(f"{_key}:now")
        _client.incr(f"{_key}:done")
