"""The relay's marks on published rows: batched while a mark is under way, none left behind, and a
failed mark does not stop the next ones."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session, sessionmaker

from shared.outbox_marks import SentMarks


class RecordingKind:
    """A row kind whose `sent` records each batch; the first call can be held until released."""

    name = "recording"

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.hold_first = threading.Event()
        self.entered = threading.Event()
        self.fail_next = False

    def sent(self, session: Session, items: Sequence[tuple[int, Any]]) -> None:
        self.entered.set()
        if not self.batches:
            assert self.hold_first.wait(5)
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("database away")
        self.batches.append([row_id for row_id, _ in items])


@pytest.fixture
def marks() -> SentMarks:
    return SentMarks(sessionmaker(create_engine("sqlite://")))


def test_an_idle_mark_is_made_at_once(marks: SentMarks) -> None:
    # Given no mark under way
    kind = RecordingKind()
    kind.hold_first.set()
    # When a row is marked
    marks.add(kind, 1, None)
    # Then it is marked before `add` returns, alone
    assert kind.batches == [[1]]


def test_marks_added_while_one_is_under_way_share_the_next_transaction(marks: SentMarks) -> None:
    # Given a mark under way in another thread, held inside its transaction
    kind = RecordingKind()
    first = threading.Thread(target=marks.add, args=(kind, 1, None))
    first.start()
    assert kind.entered.wait(5)
    # When three more rows are marked meanwhile
    for row_id in (2, 3, 4):
        marks.add(kind, row_id, None)
    # Then they return at once, and are marked together once the first mark ends
    assert kind.batches == []
    kind.hold_first.set()
    first.join(5)
    assert kind.batches == [[1], [2, 3, 4]]


def test_a_failed_mark_is_logged_and_the_next_marks_go_on(
    marks: SentMarks, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a mark whose transaction fails
    kind = RecordingKind()
    kind.hold_first.set()
    kind.fail_next = True
    marks.add(kind, 1, None)
    # Then the failure is logged with the rows (the sweep publishes them again) and nothing is marked
    assert "[1]" in caplog.text and kind.batches == []
    # And the next mark is made
    marks.add(kind, 2, None)
    assert kind.batches == [[2]]


def test_a_lingering_mark_waits_for_the_rows_published_meanwhile() -> None:
    # Given marks that linger (the fast path runs in tasks of its own)
    marks = SentMarks(sessionmaker(create_engine("sqlite://")), linger_s=0.3)
    kind = RecordingKind()
    kind.hold_first.set()
    # When three rows are published one after the other, each marked from a task of its own
    tasks = [threading.Thread(target=marks.add, args=(kind, row_id, None)) for row_id in (1, 2, 3)]
    for task in tasks:
        task.start()
    for task in tasks:
        task.join(5)
    # Then all three are marked in one transaction
    assert kind.batches == [[1, 2, 3]]
