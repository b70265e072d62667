"""A per-tenant cap on messages processed at once, across every worker process and host.

Over the cap, a message goes back to its queue with a short delay and is skipped, without spending
a retry, so one tenant's burst cannot hold every worker while another tenant waits. Slots live in
Redis (shared by all workers): the broker's, or the one `tenant_slots_redis_url` names beside a
RabbitMQ broker; only the in-process broker of the embedded topology keeps them in memory.
Every slot expires by itself unless the worker holding it renews it (a thread of each worker process
renews its slots every third of their lifetime), so one held by a killed worker comes back within a
lifetime, as its job's lease does, while a long stage keeps its slot as long as it runs.
Bulk (reindex) messages share one pool of slots of their own, whatever their tenant.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from typing import Any, Protocol

from dramatiq.broker import Broker
from dramatiq.middleware import Middleware, SkipMessage

from shared import metrics
from shared.job_waiting import TENANT_SLOT

logger = logging.getLogger(__name__)

# Dramatiq's worker thread logs every SkipMessage at WARNING ("Message %s was skipped.", in
# dramatiq/worker.py WorkerThread.process_message), and raising SkipMessage is the only way a
# before_process_message hook can stop a message. A put-back is routine, counted and logged at debug
# here, so that warning is dropped for the message this thread has just put back, and only for it.
DRAMATIQ_WORKER_LOGGER = "dramatiq.worker.WorkerThread"

# Remove expired slots, then take one if fewer than the cap are held. KEYS[1]: the tenant's slots.
ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0
"""


# The slot pool of bulk messages (no tenant id has this form).
BULK_OWNER = "~bulk"


class SlotStore(Protocol):
    def acquire(self, tenant_id: str, slot: str, *, cap: int, ttl_ms: int) -> bool: ...

    def release(self, tenant_id: str, slot: str) -> None: ...

    def renew(self, tenant_id: str, slot: str, *, ttl_ms: int) -> None: ...


class RedisSlots:
    """Slots as a sorted set per tenant, scored by expiry time."""

    def __init__(self, client: Any, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.script = client.register_script(ACQUIRE)

    def _key(self, tenant_id: str) -> str:
        return f"{self.namespace}:tenant-slots:{tenant_id}"

    def acquire(self, tenant_id: str, slot: str, *, cap: int, ttl_ms: int) -> bool:
        now = int(time.time() * 1000)
        args = [now, now + ttl_ms, cap, slot, ttl_ms]
        return bool(self.script(keys=[self._key(tenant_id)], args=args))

    def release(self, tenant_id: str, slot: str) -> None:
        self.client.zrem(self._key(tenant_id), slot)

    def renew(self, tenant_id: str, slot: str, *, ttl_ms: int) -> None:
        key = self._key(tenant_id)
        # XX: a slot that expired (and may have been taken by another) is not brought back.
        self.client.zadd(key, {slot: int(time.time() * 1000) + ttl_ms}, xx=True)
        self.client.pexpire(key, ttl_ms)


class LocalSlots:
    """Slots in this process's memory (the embedded topology: one process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: dict[str, dict[str, float]] = {}

    def acquire(self, tenant_id: str, slot: str, *, cap: int, ttl_ms: int) -> bool:
        now = time.monotonic()
        with self._lock:
            held = {s: t for s, t in self._slots.get(tenant_id, {}).items() if t > now}
            if len(held) >= cap:
                self._slots[tenant_id] = held
                return False
            held[slot] = now + ttl_ms / 1000
            self._slots[tenant_id] = held
            return True

    def release(self, tenant_id: str, slot: str) -> None:
        with self._lock:
            self._slots.get(tenant_id, {}).pop(slot, None)

    def renew(self, tenant_id: str, slot: str, *, ttl_ms: int) -> None:
        with self._lock:
            held = self._slots.get(tenant_id, {})
            if slot in held:
                held[slot] = time.monotonic() + ttl_ms / 1000


class PutBackWarnings(logging.Filter):
    """Drops the worker's "was skipped" warning of the message this thread put back."""

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    def expect(self, message_id: str) -> None:
        self._local.message_id = message_id

    def filter(self, record: logging.LogRecord) -> bool:
        expected = getattr(self._local, "message_id", None)
        if expected is None or record.levelno != logging.WARNING or not isinstance(record.args, tuple):
            return True
        if record.args and getattr(record.args[0], "message_id", None) == expected:
            self._local.message_id = None
            return False
        return True


PUT_BACK_WARNINGS = PutBackWarnings()


class TenantConcurrency(Middleware):
    """Caps each tenant's messages in progress at `cap`; the rest wait a little and come back."""

    def __init__(
        self,
        slots: SlotStore,
        *,
        cap: int,
        slot_ttl_ms: int,
        requeue_delay_ms: tuple[int, int],
        bulk_cap: int = 0,
    ) -> None:
        self.slots = slots
        self.cap = cap
        self.bulk_cap = bulk_cap
        self.slot_ttl_ms = slot_ttl_ms
        self.requeue_delay_ms = requeue_delay_ms
        self._held = threading.local()
        # Every slot this process holds, renewed by one thread started with the first (after any fork).
        self._holding: dict[str, str] = {}
        self._holding_lock = threading.Lock()
        self._renewer: threading.Thread | None = None
        logging.getLogger(DRAMATIQ_WORKER_LOGGER).addFilter(PUT_BACK_WARNINGS)  # once: same object

    def before_process_message(self, broker: Broker, message: Any) -> None:
        if message.options.get("bulk"):
            owner, cap = BULK_OWNER, self.bulk_cap
        else:
            owner, cap = message.options.get("tenant_id"), self.cap
        if not owner or cap <= 0:
            return
        slot = uuid.uuid4().hex
        if self.slots.acquire(owner, slot, cap=cap, ttl_ms=self.slot_ttl_ms):
            self._held.slot = (owner, slot)
            with self._holding_lock:
                self._holding[slot] = owner
                if self._renewer is None or not self._renewer.is_alive():
                    self._renewer = threading.Thread(target=self._renew, name="tenant-slots", daemon=True)
                    self._renewer.start()
            return
        delay = random.randint(*self.requeue_delay_ms)
        logger.debug("%s is at its cap of %s; %s back in %s ms", owner, cap, message, delay)
        # The copy says why its job waits; the hand-off of its enqueue records it on the job.
        waiting = message._message.copy(options={**message.options, "waiting": TENANT_SLOT})
        broker.enqueue(waiting, delay=delay)
        metrics.TENANT_CAP_PUT_BACKS.labels(message.queue_name).inc()
        PUT_BACK_WARNINGS.expect(message.message_id)
        raise SkipMessage()

    def _renew(self) -> None:
        while True:
            time.sleep(self.slot_ttl_ms / 3000)
            with self._holding_lock:
                holding = list(self._holding.items())
            for slot, tenant_id in holding:
                try:
                    self.slots.renew(tenant_id, slot, ttl_ms=self.slot_ttl_ms)
                except Exception:
                    logger.warning("could not renew a slot of tenant %s", tenant_id, exc_info=True)

    def _release(self) -> None:
        held = getattr(self._held, "slot", None)
        if held is not None:
            self._held.slot = None
            with self._holding_lock:
                self._holding.pop(held[1], None)
            self.slots.release(*held)

    def after_process_message(
        self, broker: Broker, message: Any, *, result: Any = None, exception: BaseException | None = None
    ) -> None:
        self._release()

    def after_skip_message(self, broker: Broker, message: Any) -> None:
        self._release()
