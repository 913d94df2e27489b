"""Idempotency keys of async submissions: a client's retry with the same ``Idempotency-Key`` gets the job
its first submission created, not a second one.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "service_idempotency_keys",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("tenant", sa.String(100), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("job_id", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.UniqueConstraint("tenant", "key_hash", name="uq_service_idempotency_tenant_key"),
    )
    op.create_index("ix_service_idempotency_expires", "service_idempotency_keys", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_service_idempotency_expires", table_name="service_idempotency_keys")
    op.drop_table("service_idempotency_keys")
