"""Review groups: one key per (sample content, judge, configuration), so the queue shows a sample that
several runs escalated once, and a decision on one item settles the others (status ``duplicate``).

Items queued before this migration have no key and stay groups of their own.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("review_items") as batch:
        batch.add_column(sa.Column("group_key", sa.String(64), nullable=True))
    op.create_index("ix_review_items_tenant_group", "review_items", ["tenant", "group_key"])


def downgrade() -> None:
    op.drop_index("ix_review_items_tenant_group", table_name="review_items")
    with op.batch_alter_table("review_items") as batch:
        batch.drop_column("group_key")
