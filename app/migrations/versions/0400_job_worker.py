"""the worker process that claimed a job

``worker`` on jobs: ``host:pid`` of the job worker process (``agora worker``) that claimed it, written
by the claim; a re-queued job gets the next claimant's.

Revision ID: 0400_job_worker
Revises: 0200_ownership
"""

import sqlalchemy as sa
from alembic import op

revision = "0400_job_worker"
down_revision = "0300_competition_split"


def upgrade() -> None:
    with op.batch_alter_table("jobs") as b:
        b.add_column(sa.Column("worker", sa.String(100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as b:
        b.drop_column("worker")
