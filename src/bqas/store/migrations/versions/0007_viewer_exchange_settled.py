"""The viewer's data: the LLM exchange of a judgment (replies, tokens, latency, cache hits per
attempt) in its own column, read by the sample page only (results stored before have none); and the
settled samples of runs judged with ``--repeats`` (canonical record, spread, straddle flag), so the viewer
pages per sample (runs finished before are settled when the viewer first opens them).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("results") as batch:
        batch.add_column(sa.Column("exchange", sa.JSON(), nullable=True))
    op.create_table(
        "settled_results",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("sample_key", sa.String(400), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("result_id", sa.Integer(), nullable=False),
        sa.Column("sample_id", sa.String(300), nullable=False),
        sa.Column("judge", sa.String(100), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("verdict", sa.String(32), nullable=True),
        sa.Column("composite", sa.Float(), nullable=True),
        sa.Column("language", sa.String(16), nullable=True),
        sa.Column("repeats", sa.Integer(), nullable=False),
        sa.Column("straddles", sa.Boolean(), nullable=False),
        sa.Column("tie", sa.Boolean(), nullable=False),
        sa.Column("spread", sa.Float(), nullable=True),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.UniqueConstraint("run_id", "sample_key", name="uq_settled_run_sample"),
    )
    op.create_index("ix_settled_run_seq", "settled_results", ["run_id", "seq"])


def downgrade() -> None:
    op.drop_index("ix_settled_run_seq", table_name="settled_results")
    op.drop_table("settled_results")
    with op.batch_alter_table("results") as batch:
        batch.drop_column("exchange")
