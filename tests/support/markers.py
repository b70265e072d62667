"""Markers from what a test needs: each test that uses a real server carries the server's marker (so
`-m "not browser"` selects by it)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pytest

# The real servers a fixture stands for, and the marker each test that uses one carries (given here
# at collection, so `-m "not browser"` and the like select by what a test needs).
SERVER_FIXTURES = {
    "pg_server_url": "postgres",
    "redis_url": "redis",
    "private_redis": "redis",
    "s3_server": "s3",
    "rabbitmq_node": "rabbitmq",
    "console": "browser",
}
SERVER_MARKERS = frozenset(SERVER_FIXTURES.values())


def server_markers(fixturenames: Iterable[str], params: Iterable[object]) -> set[str]:
    """The server markers a test needs: from the fixtures it requests, and from a parameter naming a
    server (`any_db[postgres]` and the like request theirs when they run)."""
    names = {SERVER_FIXTURES[f] for f in fixturenames if f in SERVER_FIXTURES}
    return names | {p for p in params if isinstance(p, str) and p in SERVER_MARKERS}


def pytest_itemcollected(item: pytest.Item) -> None:
    """Marks each test as it is collected (before any plugin reorders or distributes the items)."""
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    for name in server_markers(getattr(item, "fixturenames", ()), params):
        item.add_marker(name)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """A test that reached a server without its marker fails, naming the marker it lacks."""
    yield
    used = getattr(getattr(item, "_request", None), "_fixture_defs", {})
    lacking = sorted(
        {m for f, m in SERVER_FIXTURES.items() if f in used} - {m.name for m in item.iter_markers()}
    )
    if lacking:
        pytest.fail(f"{item.nodeid} uses a server without its marker: add {lacking}", pytrace=False)
