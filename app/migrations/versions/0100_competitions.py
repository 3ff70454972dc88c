"""competitions: competitions, participants, submissions, aggregation runs

Revision ID: 0100_competitions
Revises: 0001_initial
"""
from alembic import op
import sqlalchemy as sa

from app.migrations.tables import ID, TIME, create_competition_part, create_listed, optional, parent, required

revision = "0100_competitions"
down_revision = "0001_initial"


def upgrade() -> None:
    create_listed(
        "competitions",
        *required(title=sa.String(200), description=sa.Text(), n_classes=sa.Integer(), n_items=sa.Integer()),
        *required(public_fraction=sa.Float(), split_seed=sa.Integer(), daily_cap=sa.Integer(), n_select=sa.Integer()),
        *required(deadline=TIME, owner_key_id=ID, item_ids=sa.LargeBinary(), labels=sa.LargeBinary()),
        *required(extra=sa.JSON(), created_at=TIME),
    )
    create_competition_part(
        "competition_participants",
        *required(name=sa.String(100), token_hash=sa.String(64), created_at=TIME),
    )
    op.create_index("ix_competition_participants_token_hash", "competition_participants", ["token_hash"], unique=True)
    create_competition_part(
        "competition_submissions",
        parent("participant_id", "competition_participants"),
        *required(description=sa.String(500), filename=sa.String(200)),
        *required(public_perplexity=sa.Float(), public_log_loss=sa.Float()),
        *required(private_perplexity=sa.Float(), private_log_loss=sa.Float()),
        *required(selected=sa.Boolean(), warnings=sa.JSON(), data=sa.LargeBinary(), created_at=TIME),
    )
    op.create_index(
        "ix_submissions_comp_part", "competition_submissions", ["competition_id", "participant_id", "created_at"]
    )
    create_competition_part(
        "competition_aggregations",
        *optional(job_id=ID),
        *required(state=sa.String(20), params=sa.JSON(), submission_ids=sa.JSON()),
        *optional(result=sa.JSON(), error=sa.JSON()),
        *required(created_at=TIME),
        *optional(finished_at=TIME),
    )


def downgrade() -> None:
    op.drop_table("competition_aggregations")
    op.drop_table("competition_submissions")
    op.drop_table("competition_participants")
    op.drop_table("competitions")
