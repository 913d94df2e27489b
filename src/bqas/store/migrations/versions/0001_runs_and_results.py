"""Runs and results.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False, server_default="scenario"),
        sa.Column("scenario", sa.String(200), nullable=False),
        sa.Column("scenario_path", sa.Text(), nullable=True),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False, server_default="running"),
        sa.Column("total", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("summary", sa.JSON(), nullable=True),
    )
    op.create_table(
        "results",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("sample_key", sa.String(400), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("sample_id", sa.String(300), nullable=False),
        sa.Column("judge", sa.String(100), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("verdict", sa.String(32), nullable=True),
        sa.Column("composite", sa.Float(), nullable=True),
        sa.Column("language", sa.String(16), nullable=True),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("run_id", "sample_key", name="uq_results_run_sample"),
    )
    op.create_index("ix_results_run_seq", "results", ["run_id", "seq"])


def downgrade() -> None:
    op.drop_index("ix_results_run_seq", table_name="results")
    op.drop_table("results")
    op.drop_table("runs")
