"""Replicas that start together on a new PostgreSQL database migrate it once: the others wait on an
advisory lock and find the schema current (before, two concurrent ``alembic upgrade`` runs collided)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from bqas.store.db import open_store
from pg_support import fresh_postgres_database

PG_URL = os.environ.get("BQAS_TEST_POSTGRES_URL")
pytestmark = pytest.mark.skipif(not PG_URL, reason="no PostgreSQL (CI starts one with scripts/ci-postgres.sh)")
OPEN = "import sys; from bqas.store.db import open_store; open_store(sys.argv[1])"


@pytest.fixture
def fresh_db() -> Iterator[str]:
    with fresh_postgres_database("bqas_race") as url:
        yield url


@pytest.mark.timeout(120)
def test_concurrent_first_start_migrates_once(fresh_db: str) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", OPEN, fresh_db], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(4)
    ]
    outcomes = [(p.wait(timeout=100), p.stderr.read().decode()[-2000:] if p.stderr else "") for p in procs]
    assert [rc for rc, _ in outcomes] == [0] * 4, outcomes
    store = open_store(fresh_db)
    with store.session() as s:
        assert len(s.execute(text("SELECT version_num FROM alembic_version")).all()) == 1
    store.engine.dispose()
