"""The store side of ``--retry-target-errors`` on each database: a target error counts as done unless the
run retries them; then a new result replaces a stored ``target_error`` (never another result) and a new
reply the stored one of its turn. Without it nothing stored changes."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bqas.store.db import open_store

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


def _record(sample: str, status: str, note: str) -> dict[str, Any]:
    return {"sample_id": sample, "judge": "voice", "status": status, "note": note}


def test_target_errors_are_replaced_only_when_retried(store_url: str) -> None:
    store = open_store(store_url)
    run_id = f"r-retry-{secrets.token_hex(4)}"
    store.create_run(run_id, "scenario", {}, total=3)
    first = [
        ("s0::voice", 0, _record("s0", "scored", "first")),
        ("s1::voice", 1, _record("s1", "target_error", "first")),
        ("c2#1::voice", 2, _record("c2#1", "target_error", "first")),
    ]
    assert store.add_results(run_id, first) == 3
    assert store.done_keys(run_id) == {"s0::voice", "s1::voice", "c2#1::voice"}
    assert store.done_keys(run_id, retry_target_errors=True) == {"s0::voice"}
    assert set(store.target_error_samples(run_id)) == {"s1", "c2#1"}

    again = [
        ("s0::voice", 0, _record("s0", "failed", "again")),
        ("s1::voice", 1, _record("s1", "scored", "again")),
        ("c2#1::voice", 2, _record("c2#1", "target_error", "again")),
    ]
    store.add_results(run_id, again)  # a plain resume: nothing stored changes
    assert {r["sample_id"]: (r["status"], r["note"]) for r in store.iter_records(run_id)} == {
        "s0": ("scored", "first"),
        "s1": ("target_error", "first"),
        "c2#1": ("target_error", "first"),
    }
    store.add_results(run_id, again, replace_target_errors=True)
    assert {r["sample_id"]: (r["status"], r["note"]) for r in store.iter_records(run_id)} == {
        "s0": ("scored", "first"),  # not a target error: kept
        "s1": ("scored", "again"),
        "c2#1": ("target_error", "again"),  # failed again: the new reason
    }
    assert store.count_results(run_id) == 3

    store.add_target_replies(run_id, [("s1", 0, {"turn": 0, "error": "HTTP 500"})])
    store.add_target_replies(run_id, [("s1", 0, {"turn": 0, "error": None, "fields": {"response": "Gern."}})])
    assert store.target_replies(run_id, "s1") == {0: {"turn": 0, "error": "HTTP 500"}}
    store.add_target_replies(
        run_id, [("s1", 0, {"turn": 0, "error": None, "fields": {"response": "Gern."}})], replace=True
    )
    assert store.target_replies(run_id, "s1") == {0: {"turn": 0, "error": None, "fields": {"response": "Gern."}}}
    assert len(list(store.iter_target_replies(run_id))) == 1
