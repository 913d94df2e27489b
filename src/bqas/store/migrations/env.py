"""Alembic environment for the BQAS store (run by ``bqas.store.db.migrate``)."""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy import create_engine, event

from bqas.store.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations() -> None:
    url = config.get_main_option("sqlalchemy.url")
    assert url is not None
    engine = create_engine(url)
    if engine.dialect.name == "sqlite":
        _sqlite_transactional_ddl(engine)
    with engine.connect() as connection:
        # Every pending migration in one transaction, DDL included (SQLite and PostgreSQL can): a store
        # that cannot be written half-way (a full disk) is left as it was, never half-migrated.
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=True,
            transactional_ddl=True,
            transaction_per_migration=False,
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


def _sqlite_transactional_ddl(engine: Any) -> None:
    """Python's sqlite3 opens a transaction only before INSERT/UPDATE/DELETE, so CREATE and ALTER would
    each commit on their own: let SQLAlchemy's transaction be SQLite's (the recipe of SQLAlchemy's docs)."""

    @event.listens_for(engine, "connect")
    def _no_implicit_transactions(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN")


run_migrations()
