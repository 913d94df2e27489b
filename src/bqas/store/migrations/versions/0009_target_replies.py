"""The answers of the assistant under test (``target_replies``): one row per run, sample and turn.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "target_replies",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("sample_id", sa.String(300), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("reply", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("run_id", "sample_id", "turn", name="uq_target_replies_run_sample_turn"),
    )


def downgrade() -> None:
    op.drop_table("target_replies")
