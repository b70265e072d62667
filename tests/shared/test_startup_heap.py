"""A process's start-up heap is collected once, then kept out of later collections."""

from __future__ import annotations

import gc
import weakref

from shared.startup_heap import freeze_startup_heap


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_start_up_garbage_is_collected_and_what_lives_is_frozen() -> None:
    # Given a live object and a garbage cycle left by start-up
    alive = Node()
    garbage = weakref.ref(Node())
    assert garbage() is not None
    try:
        # When the start-up heap is frozen
        freeze_startup_heap()
        # Then the garbage was collected, and the live object is no longer walked by collections
        assert garbage() is None
        assert gc.get_freeze_count() > 0
        assert not any(obj is alive for obj in gc.get_objects())
    finally:
        gc.unfreeze()
    assert any(obj is alive for obj in gc.get_objects())
