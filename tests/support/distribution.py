"""How the suite is spread over its pytest-xdist workers (`--dist loadfile --no-loadscope-reorder`).

Each test module is one unit of work, as `loadfile` makes it, except that modules sharing what a
module-level cache built form one unit (the cache is then built once): the scheduler below. (xdist's
own `loadgroup` would do the same from `xdist_group` marks, but under pytest 9.2 it silently spreads
marked tests one by one, pytest-xdist issue 1386.) Units are handed out in the order of the collection,
which puts the modules marked `slow` first: handed out last, one of them would run alone on one worker
long after the other had finished, as xdist's own ordering (most tests first) did to the longest
module, which has a single test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

# Modules whose tests share what a module-level cache built, by the unit they form.
SHARED_CACHES = {"test_real_documents": "real-documents", "test_retrieval_real": "real-documents"}


def unit(nodeid: str) -> str:
    """The unit of work a test belongs to: its module's, or its shared cache's."""
    module = nodeid.split("::")[0]
    return SHARED_CACHES.get(Path(module).stem, module)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Units with a slow test first, each unit's tests in their own order (a stable sort)."""
    slow_units = {unit(item.nodeid) for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: unit(item.nodeid) not in slow_units)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile`, by units rather than files."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class UnitScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit(nodeid)

    return UnitScheduling(config, log)
