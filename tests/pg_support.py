"""A throwaway PostgreSQL database next to the test one (``BQAS_TEST_POSTGRES_URL``), for tests that
need an empty store of their own (migrations, concurrent first starts, review tables)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

PG_URL = os.environ.get("BQAS_TEST_POSTGRES_URL")


@contextmanager
def fresh_postgres_database(prefix: str) -> Iterator[str]:
    """Create an empty database named ``<prefix>_<random>``, yield its URL, drop it (forced) afterwards."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    assert PG_URL is not None, "BQAS_TEST_POSTGRES_URL is not set"
    name = f"{prefix}_{secrets.token_hex(4)}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
