"""A process's event stream slots, shared fairly among tenants, for a server whose streams hold threads."""

from __future__ import annotations

import math
import threading
from collections import Counter


class StreamSlots:
    """At most `slots` streams open at once in this process, of which one tenant holds at most
    `per_tenant` (by default half, rounded up); and the last free slot is kept for a tenant that holds
    none, so one or two busy tenants never take them all and a newcomer still gets a stream."""

    def __init__(self, slots: int, *, per_tenant: int | None = None) -> None:
        if slots < 1:
            raise ValueError("a process needs at least one stream slot")
        self.slots = slots
        self.per_tenant = max(1, min(slots, per_tenant or math.ceil(slots / 2)))
        self._held: Counter[str] = Counter()
        self._lock = threading.Lock()

    def acquire(self, tenant_id: str) -> bool:
        """Take a slot for one of the tenant's streams; False when it may not have one now."""
        with self._lock:
            held = self._held[tenant_id]
            free = self.slots - self._held.total()
            if free < 1 or held >= self.per_tenant or (held and free == 1):
                return False
            self._held[tenant_id] += 1
            return True

    def release(self, tenant_id: str) -> None:
        """Give back a slot the tenant's stream held."""
        with self._lock:
            self._held[tenant_id] -= 1
            if self._held[tenant_id] <= 0:
                del self._held[tenant_id]

    def held(self, tenant_id: str) -> int:
        """The slots the tenant holds in this process."""
        with self._lock:
            return self._held[tenant_id]
