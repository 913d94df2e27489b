"""Repeated runs: a result's key is (run, sample, judge, repeat), so ``--repeats N`` stores each repeat and
``--resume`` redoes only the missing ones. Results stored before this migration are repeat 1.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("results") as batch:
        batch.add_column(sa.Column("repeat", sa.Integer(), nullable=False, server_default="1"))
        batch.drop_constraint("uq_results_run_sample", type_="unique")
        batch.create_unique_constraint("uq_results_run_sample_repeat", ["run_id", "sample_key", "repeat"])


def downgrade() -> None:
    op.execute("DELETE FROM results WHERE repeat > 1")
    with op.batch_alter_table("results") as batch:
        batch.drop_constraint("uq_results_run_sample_repeat", type_="unique")
        batch.create_unique_constraint("uq_results_run_sample", ["run_id", "sample_key"])
        batch.drop_column("repeat")
