"""Scoring service: API keys of tenants, durable jobs with leases, per-turn job results.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "service_api_keys",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("tenant", sa.String(100), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("key_hash", name="uq_service_api_keys_key_hash"),
    )
    op.create_index("ix_service_api_keys_tenant", "service_api_keys", ["tenant"])
    op.create_table(
        "service_jobs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("tenant", sa.String(100), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False, server_default="queued"),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("done", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("claims", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("lease_owner", sa.String(100), nullable=True),
        sa.Column("lease_until", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("aggregate", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_service_jobs_tenant", "service_jobs", ["tenant"])
    op.create_index("ix_service_jobs_claim", "service_jobs", ["status", "lease_until"])
    op.create_table(
        "service_job_items",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("job_id", sa.String(64), sa.ForeignKey("service_jobs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("records", sa.JSON(), nullable=False),
        sa.Column("worker", sa.String(100), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("job_id", "seq", name="uq_service_job_items_job_seq"),
    )


def downgrade() -> None:
    op.drop_table("service_job_items")
    op.drop_index("ix_service_jobs_claim", table_name="service_jobs")
    op.drop_index("ix_service_jobs_tenant", table_name="service_jobs")
    op.drop_table("service_jobs")
    op.drop_index("ix_service_api_keys_tenant", table_name="service_api_keys")
    op.drop_table("service_api_keys")
