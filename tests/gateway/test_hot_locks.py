"""The section an upload's quota UPDATE runs in: nothing by default; under greenlets, psycopg2 waits in
place inside it and its wait callback is back afterwards, whatever happened inside."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import psycopg2.extensions
import pytest

from gateway import hot_locks


def _green_wait(connection: Any, timeout: float | None = None) -> None:
    raise AssertionError("not called: no query runs here")


@pytest.fixture
def green_callback() -> Iterator[None]:
    # Given psycopg2 waiting through a callback, as gevent's workers make it (restored after the test)
    psycopg2.extensions.set_wait_callback(_green_wait)
    try:
        yield
    finally:
        psycopg2.extensions.set_wait_callback(None)


@pytest.mark.usefixtures("green_callback")
def test_database_waits_block_inside_and_yield_again_after() -> None:
    # When a hot lock's statements run in the section
    with hot_locks.blocking_database_waits():
        inside = psycopg2.extensions.get_wait_callback()
    # Then psycopg2 had no callback inside, and has its own back after
    assert inside is None
    assert psycopg2.extensions.get_wait_callback() is _green_wait


@pytest.mark.usefixtures("green_callback")
def test_the_callback_is_back_after_a_failure_inside() -> None:
    # When a statement inside the section fails
    with pytest.raises(RuntimeError), hot_locks.blocking_database_waits():
        raise RuntimeError("lock timeout")
    # Then the callback is back all the same
    assert psycopg2.extensions.get_wait_callback() is _green_wait


def test_holding_enters_the_section_a_server_installed() -> None:
    # Given a server that installed its own section
    entered: list[str] = []

    @contextmanager
    def section() -> Iterator[None]:
        entered.append("in")
        yield
        entered.append("out")

    hot_locks.install(section)
    try:
        # When an upload holds its tenant's counters
        with hot_locks.holding():
            entered.append("update")
    finally:
        hot_locks.install(nullcontext)
    # Then the statements ran inside it
    assert entered == ["in", "update", "out"]
