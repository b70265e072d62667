"""A transaction's INSERTs sent to PostgreSQL as one statement.

An upload's transaction inserts a document, a job, the job's event and its outbox row. Sent one by
one, that is four round trips, each through SQLAlchemy's execution machinery (about a quarter of a
millisecond of the gateway's CPU apiece) and the server's parsing and planning of each. `add` holds
an INSERT's rows until the session runs anything else; `insert_returning` sends the held INSERTs with
its own as one statement, the held ones as data-modifying CTEs. PostgreSQL checks foreign keys at
the end of the statement, so a row may reference one inserted beside it.

Held rows are written before any other statement run through the session (`do_orm_execute`; not one
sent on `session.connection()` directly), before the ORM's own flush and before the commit, so what
a caller reads back is what it wrote; a rollback drops them. Elsewhere (SQLite) `add` inserts at
once. The statement's text is generated from the tables' metadata, with each column's Python default
and bind processing applied as SQLAlchemy would.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Column, Table, event, insert
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import ORMExecuteState, Session

_HELD = "insert_batch_held"

Rows = Sequence[Mapping[str, Any]]


def add(session: Session, table: Table, rows: Rows) -> None:
    """Insert `rows` into `table` in this transaction: now, or with the session's next statement."""
    if not rows:
        return
    if not _batches(session):
        session.execute(insert(table), list(rows))
        return
    session.info.setdefault(_HELD, []).append((table, rows))


def insert_returning(
    session: Session, table: Table, rows: Rows, columns: Sequence[str]
) -> list[tuple[Any, ...]]:
    """Insert `rows` into `table` after the held INSERTs, in the same statement where it can; the
    `columns` of each inserted row, in no particular order."""
    if not _batches(session):
        returning = insert(table).returning(*(table.c[name] for name in columns))
        return [tuple(row) for row in session.execute(returning, list(rows))]
    inserts = [*session.info.pop(_HELD, []), (table, rows)]
    return [tuple(row) for row in _send(session, inserts, tuple(columns))]


def flush(session: Session) -> None:
    """Write the held INSERTs now, in one statement."""
    held = session.info.pop(_HELD, [])
    if held:
        _send(session, held, ())


def _send(session: Session, inserts: list[tuple[Table, Rows]], returning: tuple[str, ...]) -> Any:
    """The INSERTs as one statement: all but the last as CTEs, the last returning `returning`."""
    dialect = session.get_bind().dialect
    texts: list[str] = []
    params: list[Any] = []
    for table, rows in inserts:
        names = tuple(sorted({name for row in rows for name in row} | _defaulted(table)))
        texts.append(_insert_text(table, names, len(rows), dialect))
        columns = [(name, _bound(table, name, dialect), table.c[name]) for name in names]
        for row in rows:
            params.extend(
                bind(row[name] if name in row else _default(column)) for name, bind, column in columns
            )
    *before, sql = texts
    if before:
        sql = "WITH " + ", ".join(f"i{n} AS ({text})" for n, text in enumerate(before)) + " " + sql
    if returning:
        sql += " RETURNING " + ", ".join(dialect.identifier_preparer.quote(name) for name in returning)
    return session.connection().exec_driver_sql(sql, tuple(params))


def _batches(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


@functools.cache
def _insert_text(table: Table, names: tuple[str, ...], count: int, dialect: Dialect) -> str:
    """`INSERT INTO table (names) VALUES (%s, ...), ...` for `count` rows."""
    preparer = dialect.identifier_preparer
    row = "(" + ", ".join(["%s"] * len(names)) + ")"
    columns = ", ".join(preparer.quote(name) for name in names)
    return f"INSERT INTO {preparer.format_table(table)} ({columns}) VALUES " + ", ".join([row] * count)


@functools.cache
def _defaulted(table: Table) -> frozenset[str]:
    """The columns SQLAlchemy fills in from a Python default when a row leaves them out."""
    return frozenset(c.name for c in table.c if c.default is not None and not c.default.is_sequence)


def _default(column: Column[Any]) -> Any:
    default = column.default
    if default is None:
        return None
    assert not default.is_clause_element, f"{column} has a SQL default, which this module cannot render"
    return default.arg(None) if default.is_callable else default.arg  # type: ignore[attr-defined]


@functools.cache
def _bound(table: Table, name: str, dialect: Dialect) -> Callable[[Any], Any]:
    processor = table.c[name].type.bind_processor(dialect)
    return processor if processor is not None else _same


def _same(value: Any) -> Any:
    return value


def _before_statement(state: ORMExecuteState) -> None:
    flush(state.session)


def _before_flush(session: Session, *_: object) -> None:
    flush(session)


def _drop(session: Session, *_: object) -> None:
    session.info.pop(_HELD, None)


event.listen(Session, "do_orm_execute", _before_statement)
event.listen(Session, "before_flush", _before_flush)
event.listen(Session, "before_commit", _before_flush)
event.listen(Session, "after_soft_rollback", _drop)
