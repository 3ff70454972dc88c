"""Helpers declaring the migrations' tables: a table reads as its key and its columns grouped by meaning.

A migration is history: whatever becomes of these helpers, every revision must keep emitting the
DDL it emitted (``tests/app/test_persistence.py`` migrates SQLite and PostgreSQL; compare the output
of ``alembic upgrade --sql`` before and after a change here).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

#: the type of row ids and of the references to them
ID = sa.String(40)
#: an instant, stored with its time zone
TIME = sa.DateTime(timezone=True)


def key(type_: sa.types.TypeEngine = ID) -> sa.Column:
    """``id``, the primary key (an integer one counts up by itself)."""
    return sa.Column("id", type_, primary_key=True)


def required(**types: sa.types.TypeEngine) -> list[sa.Column]:
    """``NOT NULL`` columns of these types, in this order."""
    return [sa.Column(name, type_, nullable=False) for name, type_ in types.items()]


def optional(**types: sa.types.TypeEngine) -> list[sa.Column]:
    """Nullable columns of these types, in this order."""
    return [sa.Column(name, type_, nullable=True) for name, type_ in types.items()]


def parent(name: str, table: str) -> sa.Column:
    """``name``, the ``NOT NULL`` reference to the row of ``table`` it belongs to (deleted with it)."""
    return sa.Column(name, ID, sa.ForeignKey(f"{table}.id", ondelete="CASCADE"), nullable=False)


def create_listed(table: str, *columns: sa.Column) -> None:
    """Create ``table`` (``id`` and ``columns``) with the ``(created_at, id)`` index its list pages
    walk (:mod:`app.pagination`)."""
    op.create_table(table, key(), *columns)
    op.create_index(f"ix_{table}_created", table, ["created_at", "id"])


def create_competition_part(table: str, *columns: sa.Column) -> None:
    """Create ``table`` of rows belonging to a competition: ``id``, the indexed ``competition_id``
    and ``columns``."""
    op.create_table(table, key(), parent("competition_id", "competitions"), *columns)
    op.create_index(f"ix_{table}_competition_id", table, ["competition_id"])
