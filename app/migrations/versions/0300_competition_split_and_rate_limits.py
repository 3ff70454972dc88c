"""competitions: the organiser's split (random, stratified, grouped) and rate limits shared by processes

Adds ``split_kind`` (existing competitions keep their random split) and ``n_public`` (the public
part's size when a stratified or grouped split makes it differ from ``round(public_fraction * n)``)
to competitions, and the ``competition_rate_counters`` table: events per rate-limit key (action and
client address) and window, so that several server processes share one budget.

ALTER TABLE ADD COLUMN, as 0102 (a batch copy of a parent table would cascade-delete its children on
SQLite).

Revision ID: 0300_competition_split
Revises: 0200_ownership
"""

import sqlalchemy as sa
from alembic import op

revision = "0300_competition_split"
down_revision = "0200_ownership"


def upgrade() -> None:
    op.create_table(
        "competition_rate_counters",
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("window_start", sa.BigInteger(), primary_key=True),
        sa.Column("count", sa.Integer(), nullable=False),
    )
    op.add_column("competitions", sa.Column("split_kind", sa.String(12), nullable=False, server_default="random"))
    op.add_column("competitions", sa.Column("n_public", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_table("competition_rate_counters")
    op.drop_column("competitions", "n_public")
    op.drop_column("competitions", "split_kind")
