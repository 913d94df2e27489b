"""BQAS_REDACT_PII=true: nothing stored or logged holds what the PII check finds.

PII is planted in every field of a sample, in the LLM's reasoning, in response ids and sample ids and in
the dict keys of a job request; it goes in through the service (sync, async, session) and through
`bqas run` (offline and LLM tiers, review loop with a low alert threshold). Then the whole database,
the LLM response cache and the captured logs are dumped and searched: zero hits."""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from bqas.cli.main import app as cli
from bqas.privacy import enable_redaction, redact, redact_id
from bqas.review.queue import ItemFilter, list_items, submit_review
from bqas.review.settings import get_review_settings
from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.service.testing import ServiceServer
from bqas.settings import Settings, get_settings
from bqas.store.db import open_store
from bqas.store.service import create_api_key
from bqas.testing.scripted_llm import Reply, ScriptedLLM

EMAIL = "lena.schmidt@example.org"
EMAIL2 = "paul.krause@example.com"
PHONE = "0171 2345678"
IBAN = "DE89 3704 0044 0532 0130 00"
PLANTED = (EMAIL, EMAIL2, PHONE, IBAN, "lena.schmidt", "paul.krause", "2345678", "0532 0130")

REASONING = f"Die Antwort nennt {EMAIL} und Tel. {PHONE}; das ist ein Datenleck."
LLM_REPLY = {
    "intent_accuracy": 90,
    "faithfulness": 2,
    "relevance": 3,
    "coherence": 4,
    "safety": "fail",
    "reasoning": REASONING,
}
ANSWER = f"Schreib an {EMAIL} oder ruf an: Tel. {PHONE}. Konto: IBAN {IBAN}."
SAMPLE = {
    "user_input": f"Schreib den Eltern, Kontakt {EMAIL2}",
    "detected_intent": "parent_letter",
    "response": ANSWER,
    "expected_intent": "parent_letter",
}


@pytest.fixture
def redacting(bqas_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedLLM]:
    with ScriptedLLM(default=Reply(content=json.dumps(LLM_REPLY))) as llm:
        for name, value in {
            "BQAS_REDACT_PII": "true",
            "BQAS_ALERT_THRESHOLD": "1",
            "BQAS_LLM_BASE_URL": llm.base_url,
            "BQAS_JUDGE_MODEL": "scripted",
            "BQAS_LLM_MAX_RETRIES": "0",
        }.items():
            monkeypatch.setenv(name, value)
        get_settings.cache_clear()
        get_review_settings.cache_clear()
        enable_redaction(None)  # read the environment again
        yield llm
    enable_redaction(False)
    enable_redaction(None)
    get_review_settings.cache_clear()


def _dump(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return "\n".join(conn.iterdump())
    finally:
        conn.close()


def _hits(text: str) -> list[str]:
    low = text.lower()
    return [p for p in PLANTED if p.lower() in low]


def _wait(url: str, headers: dict[str, str], job_id: str) -> dict[str, Any]:
    deadline = time.time() + 30
    while time.time() < deadline:
        job: dict[str, Any] = httpx.get(f"{url}/api/jobs/{job_id}", headers=headers).json()
        if job["status"] in ("done", "failed"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish")


def test_nothing_stored_or_logged_contains_planted_pii(
    redacting: ScriptedLLM, bqas_home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="bqas")
    store = open_store()
    settings = Settings(home=bqas_home)  # the LLM cache on, under the home
    service = create_app(settings=settings, service=ServiceSettings(rate_limit=0, job_poll_seconds=0.05), store=store)
    headers = {"Authorization": f"Bearer {create_api_key(store, 'school-17')}"}
    with ServiceServer(service) as server:
        url = server.base_url
        sync = {"sample": SAMPLE, "judges": ["voice"], "backend": "auto", "response_id": f"sync-{EMAIL}"}
        answer = httpx.post(f"{url}/api/score", json=sync, headers=headers)
        assert answer.status_code == 200, answer.text
        assert answer.json()[0]["escalation"]  # the live answer is the caller's own data: not masked
        rag = {
            "question": f"Welche Noten hat die Schülerin mit der Adresse {EMAIL2}?",
            "answer": ANSWER,
            "contexts": [f"Kontakt: {EMAIL}, Tel. {PHONE}", f"Konto IBAN {IBAN}"],
            "judges": ["rag_privacy", "rag_hallucination"],
            "backend": "auto",
            "response_id": f"rag {EMAIL}",
        }
        assert httpx.post(f"{url}/api/score", json=rag, headers=headers).status_code == 200
        keyed = {**SAMPLE, EMAIL2: "a sample key holding an e-mail"}
        body = {"sample": keyed, "judges": ["voice"], "backend": "auto", "response_id": f"async Tel. {PHONE}"}
        job = _wait(url, headers, httpx.post(f"{url}/api/score/async", json=body, headers=headers).json()["job_id"])
        assert job["status"] == "done", job
        turns = [{"question": SAMPLE["user_input"], "answer": ANSWER, "response_id": f"turn-{EMAIL}"}] * 2
        session = {
            "judges": ["voice"],
            "backend": "auto",
            "sample": {"detected_intent": "x", "expected_intent": "x"},
            "turns": turns,
        }
        posted = httpx.post(f"{url}/api/score/session_async", json=session, headers=headers)
        assert posted.status_code == 202, posted.text
        assert _wait(url, headers, posted.json()["job_id"])["status"] == "done"
    # `bqas run` into the same store, with PII in the sample ids too.
    rows = [{"id": f"row-{EMAIL}", **SAMPLE}, {"id": f"row Tel. {PHONE}", **SAMPLE, "response": f"Mail {EMAIL2}"}]
    (tmp_path / "d.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    (tmp_path / "s.yaml").write_text("name: pii\njudges: [voice]\nbackend: auto\ndataset: d.jsonl\n", "utf-8")
    # Judged twice: the settled samples of a repeated run (the viewer's) are stored masked too.
    args = ["run", str(tmp_path / "s.yaml"), "--no-progress", "--out", str(tmp_path / "o"), "--repeats", "2"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in (0, 1), result.output

    # A reviewer's comment quoting the PII is masked too.
    item = list_items(store, "school-17", ItemFilter())[0][0]
    submit_review(
        store, "school-17", item.id, verdict="failed", raw_values={}, comment=f"leaks {EMAIL}", reviewer="key:x"
    )

    database = _dump(bqas_home / "bqas.sqlite")
    caches = list(bqas_home.rglob("*cache*.sqlite"))
    assert caches, "the LLM cache was not used"
    cache = "\n".join(_dump(p) for p in caches)
    logs = caplog.text
    # The dumps are real: the masked rows are there.
    for table in (
        "review_items",
        "review_judgments",
        "review_categories",
        "review_alerts",
        "results",
        "settled_results",
    ):
        assert f'INSERT INTO "{table}"' in database, table
    assert "[EMAIL]" in database and "[PHONE]" in database and "[IBAN]" in database and "[EMAIL]" in cache
    assert "leaks [EMAIL]" in database  # the comment was stored, masked
    with sqlite3.connect(bqas_home / "bqas.sqlite") as conn:  # the LLM exchange (the viewer's) is masked too
        exchanges = [r[0] for r in conn.execute("SELECT exchange FROM results WHERE exchange IS NOT NULL")]
    replies = [a["reply"] for e in exchanges if e != "null" for a in json.loads(e)["attempts"]]
    assert replies and all("[EMAIL]" in r and "[PHONE]" in r for r in replies)
    assert "new error category" in logs and "[EMAIL]" in logs
    assert redacting.requests, "the LLM was not asked"
    assert _hits(database) == [] and _hits(cache) == [] and _hits(logs) == []


def test_redaction_masks_keys_is_idempotent_and_keeps_ids_apart() -> None:
    enable_redaction(True)
    try:
        masked = redact({EMAIL: [f"mail {EMAIL2}", 3], "n": None})
        assert masked == {"[EMAIL]": ["mail [EMAIL]", 3], "n": None}
        a, b = redact_id(f"r/{EMAIL}"), redact_id(f"r/{EMAIL2}")
        assert a != b and a.startswith("r/[EMAIL]~") and redact_id(a) == a
        assert redact_id("plain-id") == "plain-id"
    finally:
        enable_redaction(None)


def test_control_characters_in_ids_never_forge_log_lines(bqas_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    from bqas.review.process import process_results
    from test_review_support import voice_record

    caplog.set_level(logging.WARNING, logger="bqas")
    store = open_store()
    forged = "x\nCRITICAL forged line\x1b[2J\u202e"
    record = voice_record(forged, composite=30.0, verdict="failed", safety="fail", reasons=["gate safety failed"])
    process_results(store, "acme", [record])
    lines = [r.getMessage() for r in caplog.records if "new error category" in r.getMessage()]
    assert lines and all("\n" not in m and "\x1b" not in m and "\u202e" not in m for m in lines)
    assert any(re.search(r"x\\nCRITICAL forged line\\x1b\[2J\\u202e", m) for m in lines)
