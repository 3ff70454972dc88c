"""competitions: their arrays (item ids, hidden labels, submissions) move to the blobs table

The competition's item ids and hidden labels and each submission's matrix were ``.npy`` columns of
the competition tables; they become rows of ``blobs`` (owner types ``competition`` and
``submission``), stored and read like every other array of the service. The bytes are moved
unchanged. Only uploads (owner type ``upload``) are ever served by ``/v1/arrays``, so the hidden
labels stay hidden.

Revision ID: 0101_competition_blobs
Revises: 0100_competitions
"""
import io
from datetime import datetime, timezone

import numpy as np
import sqlalchemy as sa
from alembic import op

revision = "0101_competition_blobs"
down_revision = "0100_competitions"

MOVED = (("competitions", "competition", ("item_ids", "labels")), ("competition_submissions", "submission", ("data",)))
"""(table, blob owner type, columns moved to blobs named after the column)."""

BLOBS = sa.table(
    "blobs", sa.column("owner_type", sa.String), sa.column("owner_id", sa.String), sa.column("name", sa.String),
    sa.column("dtype", sa.String), sa.column("shape", sa.JSON), sa.column("data", sa.LargeBinary),
    sa.column("created_at", sa.DateTime(timezone=True)),
)


def _table(name: str, columns: tuple[str, ...]) -> sa.TableClause:
    return sa.table(name, sa.column("id", sa.String), *(sa.column(c, sa.LargeBinary) for c in columns))


def upgrade() -> None:
    conn = op.get_bind()
    now = datetime.now(timezone.utc)
    for table, owner_type, columns in MOVED:
        t = _table(table, columns)
        for rid in conn.execute(sa.select(t.c.id)).scalars().all():  # one row at a time: submissions are large
            row = conn.execute(sa.select(t).where(t.c.id == rid)).one()._mapping
            for c in columns:
                arr = np.load(io.BytesIO(row[c]), allow_pickle=False)
                conn.execute(BLOBS.insert().values(owner_type=owner_type, owner_id=rid, name=c, dtype=str(arr.dtype),
                                                   shape=list(arr.shape), data=row[c], created_at=now))
        for c in columns:
            op.drop_column(table, c)


def downgrade() -> None:
    conn = op.get_bind()
    for table, owner_type, columns in MOVED:
        for c in columns:
            op.add_column(table, sa.Column(c, sa.LargeBinary(), nullable=True))
        t = _table(table, columns)
        for c in columns:
            rows = conn.execute(sa.select(BLOBS.c.owner_id, BLOBS.c.data).where(BLOBS.c.owner_type == owner_type, BLOBS.c.name == c))
            for owner_id, data in rows.all():
                conn.execute(sa.update(t).where(t.c.id == owner_id).values({c: data}))
        conn.execute(sa.delete(BLOBS).where(BLOBS.c.owner_type == owner_type))
