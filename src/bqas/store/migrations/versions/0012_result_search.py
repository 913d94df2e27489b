"""An index for the viewer's free-text search over a run's results (sample id and record).

SQLite: ``results_fts``, an FTS5 table over the view ``results_fts_body`` with the trigram tokenizer (the rows holding every
three-character piece of a text are an index look-up), filled per run on its first search (``bqas.viewer.search``), so a
run that is never searched costs nothing; ``results_fts_state`` says up to which result id each run is in
it. PostgreSQL: a trigram GIN index (``pg_trgm``) on the record's text, which the planner uses for the
search's ``LIKE '%…%'``; where the extension cannot be created (no privilege), the search scans as before.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

log = logging.getLogger("bqas.store")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        try:
            with bind.begin_nested():
                # detail='none': no positions (a third smaller and faster to fill); the search asks for every
                # trigram of its text and the LIKE decides, so positions are not needed.
                # Its content is a view of the results, not stored twice; a table without content at all
                # could not be read back, and `sqlite3 .dump` (iterdump) of the store would fail on it.
                op.execute(
                    "CREATE VIEW results_fts_body AS SELECT id, sample_id || char(10) || record AS body FROM results"
                )
                op.execute(
                    "CREATE VIRTUAL TABLE results_fts USING fts5(body, content='results_fts_body', content_rowid='id', "
                    "tokenize='trigram', detail='none', columnsize=0)"
                )
        except sa.exc.OperationalError as exc:  # an SQLite without FTS5 or its trigram tokenizer (< 3.34)
            log.warning("free-text search without an index: %s", exc)
            return
        op.create_table(
            "results_fts_state",
            sa.Column("run_id", sa.String(64), primary_key=True),
            sa.Column("max_id", sa.Integer(), nullable=False),
        )
    elif bind.dialect.name == "postgresql":
        try:
            with bind.begin_nested():
                op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
                op.execute(
                    "CREATE INDEX ix_results_record_trgm ON results USING gin ((CAST(record AS VARCHAR)) gin_trgm_ops)"
                )
        except sa.exc.DBAPIError as exc:  # no privilege to create the extension
            log.warning("free-text search without an index: %s", exc)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        op.execute("DROP TABLE IF EXISTS results_fts")
        op.execute("DROP VIEW IF EXISTS results_fts_body")
        op.execute("DROP TABLE IF EXISTS results_fts_state")
    elif bind.dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_results_record_trgm")
