"""Review loop: review queue, memory of judgments, error categories, alerts, review page sessions.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "review_items",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("tenant", sa.String(100), nullable=False),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("response_id", sa.String(300), nullable=False),
        sa.Column("judge", sa.String(100), nullable=False),
        sa.Column("language", sa.String(16), nullable=True),
        sa.Column("verdict", sa.String(32), nullable=True),
        sa.Column("composite", sa.Float(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False, server_default="open"),
        sa.Column("reasons", sa.JSON(), nullable=False),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.Column("inputs", sa.JSON(), nullable=True),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("reviewed_at", sa.Float(), nullable=True),
        sa.Column("reviewer", sa.String(100), nullable=True),
        sa.Column("human_verdict", sa.String(32), nullable=True),
        sa.Column("human_values", sa.JSON(), nullable=True),
        sa.Column("human_composite", sa.Float(), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.UniqueConstraint("tenant", "source", "response_id", "judge", name="uq_review_items_key"),
    )
    op.create_index("ix_review_items_tenant_status_at", "review_items", ["tenant", "status", "at"])
    op.create_table(
        "review_judgments",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("tenant", sa.String(100), nullable=False),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("response_id", sa.String(300), nullable=False),
        sa.Column("judge", sa.String(100), nullable=False),
        sa.Column("language", sa.String(16), nullable=True),
        sa.Column("verdict", sa.String(32), nullable=True),
        sa.Column("composite", sa.Float(), nullable=True),
        sa.Column("scores", sa.JSON(), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("embedder", sa.String(40), nullable=True),
        sa.Column("embedding", sa.LargeBinary(), nullable=True),
        sa.Column("review_item_id", sa.Integer(), nullable=True),
        sa.Column("reviewed_at", sa.Float(), nullable=True),
        sa.Column("human_verdict", sa.String(32), nullable=True),
        sa.Column("human_values", sa.JSON(), nullable=True),
        sa.Column("human_composite", sa.Float(), nullable=True),
        sa.UniqueConstraint("tenant", "source", "response_id", "judge", name="uq_review_judgments_key"),
    )
    op.create_index("ix_review_judgments_failed", "review_judgments", ["tenant", "judge", "verdict", "at"])
    op.create_index("ix_review_judgments_reviewed", "review_judgments", ["tenant", "judge", "reviewed_at"])
    op.create_table(
        "review_categories",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("tenant", sa.String(100), nullable=False),
        sa.Column("judge", sa.String(100), nullable=False),
        sa.Column("category", sa.String(200), nullable=False),
        sa.Column("first_at", sa.Float(), nullable=False),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("response_id", sa.String(300), nullable=False),
        sa.Column("example", sa.Text(), nullable=True),
        sa.UniqueConstraint("tenant", "judge", "category", name="uq_review_categories_key"),
    )
    op.create_index("ix_review_categories_first_at", "review_categories", ["first_at"])
    op.create_table(
        "review_alert_state",
        sa.Column("tenant", sa.String(100), primary_key=True),
        sa.Column("judge", sa.String(100), primary_key=True),
        sa.Column("last_alert_at", sa.Float(), nullable=False),
    )
    op.create_table(
        "review_alerts",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("tenant", sa.String(100), nullable=False),
        sa.Column("judge", sa.String(100), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False, server_default="pending"),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("error", sa.Text(), nullable=True),
    )
    op.create_index("ix_review_alerts_tenant_at", "review_alerts", ["tenant", "at"])
    op.create_table(
        "review_sessions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("tenant", sa.String(100), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("key_prefix", sa.String(16), nullable=False),
        sa.Column("csrf", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.UniqueConstraint("token_hash", name="uq_review_sessions_token_hash"),
    )
    op.create_index("ix_review_sessions_expires_at", "review_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_review_sessions_expires_at", table_name="review_sessions")
    op.drop_table("review_sessions")
    op.drop_index("ix_review_alerts_tenant_at", table_name="review_alerts")
    op.drop_table("review_alerts")
    op.drop_table("review_alert_state")
    op.drop_index("ix_review_categories_first_at", table_name="review_categories")
    op.drop_table("review_categories")
    op.drop_index("ix_review_judgments_reviewed", table_name="review_judgments")
    op.drop_index("ix_review_judgments_failed", table_name="review_judgments")
    op.drop_table("review_judgments")
    op.drop_index("ix_review_items_tenant_status_at", table_name="review_items")
    op.drop_table("review_items")
