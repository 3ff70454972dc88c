"""competitions: invitations, and the public score an organiser chooses to show (exact, rounded, Ladder)

Adds ``join_policy``, ``score_mechanism``, ``score_step`` and ``pinned_aggregation_id`` (the run
the leaderboard shows) to competitions (existing ones stay open
with exact scores, as before), ``shown_public_perplexity`` to submissions (null for old rows: the
exact score is shown), ``status``/``status_reason`` to submissions (withdrawn by the participant,
excluded by the organiser; old rows are active), ``stage`` to aggregation runs (what a running
run is doing), and the ``competition_invitations`` table.

Revision ID: 0102_competition_integrity
Revises: 0101_competition_blobs
"""

import sqlalchemy as sa
from alembic import op

from app.migrations.tables import ID, TIME, create_competition_part, optional, required

revision = "0102_competition_integrity"
down_revision = "0101_competition_blobs"


def upgrade() -> None:
    # plain ALTER TABLE (no batch copy: on SQLite a copied parent table would cascade-delete its children)
    op.add_column("competitions", sa.Column("join_policy", sa.String(10), nullable=False, server_default="open"))
    op.add_column("competitions", sa.Column("score_mechanism", sa.String(10), nullable=False, server_default="exact"))
    op.add_column("competitions", sa.Column("score_step", sa.Float(), nullable=False, server_default="0"))
    op.add_column("competitions", sa.Column("pinned_aggregation_id", sa.String(40), nullable=True))
    op.add_column("competition_submissions", sa.Column("shown_public_perplexity", sa.Float(), nullable=True))
    op.add_column(
        "competition_submissions", sa.Column("status", sa.String(12), nullable=False, server_default="active")
    )
    op.add_column(
        "competition_submissions", sa.Column("status_reason", sa.String(200), nullable=False, server_default="")
    )
    op.add_column("competition_aggregations", sa.Column("stage", sa.String(100), nullable=False, server_default=""))
    create_competition_part(
        "competition_invitations",
        *required(code_hash=sa.String(64), note=sa.String(200)),
        *optional(participant_id=ID),
        *required(created_at=TIME),
        *optional(used_at=TIME),
    )
    op.create_index("ix_competition_invitations_code_hash", "competition_invitations", ["code_hash"], unique=True)


def downgrade() -> None:
    op.drop_table("competition_invitations")
    op.drop_column("competition_aggregations", "stage")
    for c in ("status_reason", "status", "shown_public_perplexity"):
        op.drop_column("competition_submissions", c)
    for c in ("pinned_aggregation_id", "score_step", "score_mechanism", "join_policy"):
        op.drop_column("competitions", c)
