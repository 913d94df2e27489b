"""The results store on SQLite and (when CI provides one) PostgreSQL: migrations, idempotent inserts,
streaming reads, and a whole scenario run stored in PostgreSQL."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.store.db import Store, open_store

PG_URL = os.environ.get("BQAS_TEST_POSTGRES_URL")
BACKENDS = [
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.skipif(not PG_URL, reason="no PostgreSQL (CI starts one)")),
]


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.sqlite'}"
    else:
        assert PG_URL is not None
        yield PG_URL


def _record(i: int) -> dict[str, object]:
    return {
        "sample_id": f"s{i}",
        "judge": "voice",
        "status": "scored",
        "verdict": "production_ready",
        "composite_score": 80.0 + i,
        "language": "de",
        "text": "Grüße {x} 你好",
    }


def test_migrations_are_idempotent_and_inserts_never_duplicate(store_url: str) -> None:
    store = open_store(store_url)
    open_store(store_url)  # migrating an up-to-date database is a no-op
    run_id = f"r-test-{secrets.token_hex(4)}"
    store.create_run(run_id, "scenario", {"k": "v"}, total=3)
    assert store.add_results(run_id, [(f"s{i}::voice", i, _record(i)) for i in range(3)]) == 3
    assert store.add_results(run_id, [("s1::voice", 1, _record(1)), ("s3::voice", 3, _record(3))]) == 1
    assert store.count_results(run_id) == 4
    assert store.done_keys(run_id) == {"s0::voice", "s1::voice", "s2::voice", "s3::voice"}
    records = list(store.iter_records(run_id, batch=2))
    assert [r["sample_id"] for r in records] == ["s0", "s1", "s2", "s3"]
    assert records[0]["text"] == "Grüße {x} 你好"
    found = store.find_run(run_id[:-2])
    assert found is not None and found.id == run_id
    store.update_run(run_id, status="done")
    run = store.get_run(run_id)
    assert run is not None and run.status == "done" and run.config == {"k": "v"}


def test_scenario_run_and_resume_on_each_database(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bqas_home: Path
) -> None:
    monkeypatch.setenv("BQAS_DATABASE_URL", store_url)
    from bqas.settings import get_settings

    get_settings.cache_clear()
    data = tmp_path / "d.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"x{i}",
                    "user_input": "Erinnere mich an die Konferenz",
                    "detected_intent": "reminder",
                    "response": "Mache ich.",
                    "expected_intent": "reminder",
                }
            )
            + "\n"
            for i in range(4)
        ),
        encoding="utf-8",
    )
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        f"name: store-{secrets.token_hex(3)}\njudges: [voice]\ndataset: {data.name}\n", encoding="utf-8"
    )
    runner = CliRunner()
    assert runner.invoke(app, ["run", str(scenario), "--no-progress", "--out", str(tmp_path / "o")]).exit_code == 0
    run_id = json.loads(runner.invoke(app, ["runs", "--json"]).output)[0]["id"]
    # Resuming a finished run judges nothing again and keeps the results as they are.
    again = runner.invoke(app, ["run", "--resume", run_id, "--no-progress", "--out", str(tmp_path / "o2")])
    assert again.exit_code == 0 and "judged now: 0" in again.output
    store: Store = open_store(store_url)
    assert store.count_results(run_id) == 4


def test_migrations_run_only_when_the_schema_is_not_current(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Alembic costs most of a second on every start (cold start); a current store skips it.
    from sqlalchemy import text

    import bqas.store.db as db

    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    calls: list[str] = []
    real_migrate = db.migrate
    monkeypatch.setattr(db, "migrate", lambda u: (calls.append(u), real_migrate(u))[1])
    open_store(url)
    assert calls == [url]  # a new database is migrated
    assert len(db.head_revisions()) == 1  # the project keeps exactly one head
    open_store(url)
    assert calls == [url]  # the second start found the head revision and did not run Alembic
    from alembic import command
    from alembic.config import Config

    old = f"sqlite:///{tmp_path / 'old.sqlite'}"  # a store made by an older BQAS (revision 0002)
    cfg = Config()
    cfg.set_main_option("script_location", "bqas.store:migrations")
    cfg.set_main_option("sqlalchemy.url", old)
    command.upgrade(cfg, "0002")
    upgraded = open_store(old)
    assert calls == [url, old]
    with upgraded.engine.connect() as conn:
        assert {r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version"))} == db.head_revisions()
