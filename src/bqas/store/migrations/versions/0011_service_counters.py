"""Counters of the job queue kept in the database (``service_counters``): one row per counter, so that
every replica's ``/metrics`` reports the same total, also of what worker processes without HTTP did
(lease recoveries: jobs claimed again after their worker's lease ran out).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "service_counters",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("value", sa.BigInteger(), nullable=False, server_default="0"),
    )


def downgrade() -> None:
    op.drop_table("service_counters")
