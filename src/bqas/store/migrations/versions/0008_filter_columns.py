"""The viewer's common filters as indexed columns: a result's trust-or-escalate ``decision``,
its ``intent`` and whether it was ``escalated`` are copied out of the record (the JSON stays the source),
and (run, field, seq) indexes serve the verdict, decision, language, intent, escalated and unscored
filters, their counts and the default order without reading the records. Existing rows are filled here.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

TABLES = ("results", "settled_results")
FIELDS = ("verdict", "decision", "language", "intent", "escalated", "status")


def _fill(table: str) -> None:
    """Copy the fields out of the stored records (strings only, within the column's length; else NULL)."""
    postgres = op.get_bind().dialect.name == "postgresql"

    def text_field(key: str, limit: int) -> str:
        if postgres:
            value, is_text = f"(record ->> '{key}')", f"json_typeof(record -> '{key}') = 'string'"
        else:
            value, is_text = f"json_extract(record, '$.{key}')", f"json_type(record, '$.{key}') = 'text'"
        return f"CASE WHEN {is_text} AND length({value}) <= {limit} THEN {value} END"

    escalation = "(record ->> 'escalation')" if postgres else "json_extract(record, '$.escalation')"
    op.execute(
        f"UPDATE {table} SET decision = {text_field('decision', 16)}, intent = {text_field('intent', 200)}, "
        f"escalated = CASE WHEN {escalation} IS NULL THEN FALSE ELSE TRUE END"
    )


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("decision", sa.String(16), nullable=True))
            batch.add_column(sa.Column("intent", sa.String(200), nullable=True))  # RedactedId in the model
            batch.add_column(sa.Column("escalated", sa.Boolean(), nullable=False, server_default=sa.false()))
        _fill(table)
        for name in FIELDS:
            op.create_index(f"ix_{table}_run_{name}", table, ["run_id", name, "seq"])


def downgrade() -> None:
    for table in TABLES:
        for name in FIELDS:
            op.drop_index(f"ix_{table}_run_{name}", table_name=table)
        with op.batch_alter_table(table) as batch:
            batch.drop_column("escalated")
            batch.drop_column("intent")
            batch.drop_column("decision")
