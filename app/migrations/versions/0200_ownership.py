"""ownership of stored resources and leases of pending idempotency records

``owner`` (the creating API key's id, or ``anonymous``) on pools, markets, jobs and blobs (set on
uploads); rows created before stay NULL and are visible to admin keys only. ``lease_until`` on
idempotency records: a pending record whose lease has ended (its server died) no longer blocks its key;
``resource`` on idempotency records: the URL of what the request created, written in the same
transaction as the resource itself (a retry after a crash answers from it instead of creating again).

Revision ID: 0200_ownership
Revises: 0102_competition_integrity (linear history: 0102 and 0200 were written in parallel)
"""

import sqlalchemy as sa
from alembic import op

revision = "0200_ownership"
down_revision = "0102_competition_integrity"

OWNED = ("pools", "markets", "jobs", "blobs")
INDEXED = ("pools", "markets", "jobs")


def upgrade() -> None:
    for table in OWNED:
        with op.batch_alter_table(table) as b:
            b.add_column(sa.Column("owner", sa.String(40), nullable=True))
    for table in INDEXED:
        op.create_index(f"ix_{table}_owner", table, ["owner"])
    with op.batch_alter_table("idempotency") as b:
        b.add_column(sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True))
        b.add_column(sa.Column("resource", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("idempotency") as b:
        b.drop_column("resource")
        b.drop_column("lease_until")
    for table in INDEXED:
        op.drop_index(f"ix_{table}_owner", table)
    for table in OWNED:
        with op.batch_alter_table(table) as b:
            b.drop_column("owner")
