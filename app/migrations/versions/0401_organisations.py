"""organisations of API keys

``organisations`` (id, name, created_at) and ``api_keys.org_id``: every key of an organisation sees
and acts on what any key of it owns (``app.tenancy``).

Revision ID: 0401_organisations
Revises: 0400_job_worker
"""

import sqlalchemy as sa
from alembic import op

from app.migrations.tables import ID, TIME, create_listed, required

revision = "0401_organisations"
down_revision = "0400_job_worker"


def upgrade() -> None:
    create_listed("organisations", *required(created_at=TIME, name=sa.String(200)))
    with op.batch_alter_table("api_keys") as b:
        b.add_column(sa.Column("org_id", ID, nullable=True))
    op.create_index("ix_api_keys_org_id", "api_keys", ["org_id"])


def downgrade() -> None:
    op.drop_index("ix_api_keys_org_id", "api_keys")
    with op.batch_alter_table("api_keys") as b:
        b.drop_column("org_id")
    op.drop_index("ix_organisations_created", "organisations")
    op.drop_table("organisations")
