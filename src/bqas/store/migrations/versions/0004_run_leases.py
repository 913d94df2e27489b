"""Run leases: which process runs a scenario run now (``host:pid:token``) and until when.

A run whose lease ran out, or whose process is gone from this host, is shown as ``interrupted``;
a second ``bqas run --resume`` of a run with a live lease refuses.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("lease_owner", sa.String(100), nullable=True))
        batch.add_column(sa.Column("lease_until", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("lease_until")
        batch.drop_column("lease_owner")
