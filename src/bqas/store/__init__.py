"""The SQL results store (SQLAlchemy; SQLite by default, PostgreSQL by ``BQAS_DATABASE_URL``)."""

from bqas.store.db import Store, open_store

__all__ = ["Store", "open_store"]
