"""competitions: competitions, participants, submissions, aggregation runs

Revision ID: 0100_competitions
Revises: 0001_initial
"""
from alembic import op
import sqlalchemy as sa

revision = "0100_competitions"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "competitions",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("n_classes", sa.Integer(), nullable=False),
        sa.Column("n_items", sa.Integer(), nullable=False),
        sa.Column("public_fraction", sa.Float(), nullable=False),
        sa.Column("split_seed", sa.Integer(), nullable=False),
        sa.Column("daily_cap", sa.Integer(), nullable=False),
        sa.Column("n_select", sa.Integer(), nullable=False),
        sa.Column("deadline", sa.DateTime(timezone=True), nullable=False),
        sa.Column("owner_key_id", sa.String(40), nullable=False),
        sa.Column("item_ids", sa.LargeBinary(), nullable=False),
        sa.Column("labels", sa.LargeBinary(), nullable=False),
        sa.Column("extra", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_competitions_created", "competitions", ["created_at", "id"])
    op.create_table(
        "competition_participants",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("competition_id", sa.String(40), sa.ForeignKey("competitions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_competition_participants_competition_id", "competition_participants", ["competition_id"])
    op.create_index("ix_competition_participants_token_hash", "competition_participants", ["token_hash"], unique=True)
    op.create_table(
        "competition_submissions",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("competition_id", sa.String(40), sa.ForeignKey("competitions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("participant_id", sa.String(40), sa.ForeignKey("competition_participants.id", ondelete="CASCADE"), nullable=False),
        sa.Column("description", sa.String(500), nullable=False),
        sa.Column("filename", sa.String(200), nullable=False),
        sa.Column("public_perplexity", sa.Float(), nullable=False),
        sa.Column("public_log_loss", sa.Float(), nullable=False),
        sa.Column("private_perplexity", sa.Float(), nullable=False),
        sa.Column("private_log_loss", sa.Float(), nullable=False),
        sa.Column("selected", sa.Boolean(), nullable=False),
        sa.Column("warnings", sa.JSON(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_competition_submissions_competition_id", "competition_submissions", ["competition_id"])
    op.create_index("ix_submissions_comp_part", "competition_submissions", ["competition_id", "participant_id", "created_at"])
    op.create_table(
        "competition_aggregations",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("competition_id", sa.String(40), sa.ForeignKey("competitions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("job_id", sa.String(40), nullable=True),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("submission_ids", sa.JSON(), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_competition_aggregations_competition_id", "competition_aggregations", ["competition_id"])


def downgrade() -> None:
    op.drop_table("competition_aggregations")
    op.drop_table("competition_submissions")
    op.drop_table("competition_participants")
    op.drop_table("competitions")
