"""With BQAS_MEMORY_EXAMPLES=true the service gives the LLM judge the caller's own reviewed cases (fenced as
data) as calibration examples, and never another tenant's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bqas.review.queue import ItemFilter, enqueue_escalations, list_items, submit_review
from bqas.review.settings import get_review_settings
from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.service.testing import ServiceServer
from bqas.settings import Settings
from bqas.store.db import open_store
from bqas.store.service import create_api_key
from bqas.testing.scripted_llm import Reply, ScriptedLLM
from test_review_support import voice_record

INPUTS = {
    "user_input": "Erinnere mich morgen an die Konferenz",
    "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen um 8 Uhr an die Konferenz.",
    "expected_intent": "reminder",
}
ANSWER = {
    "intent_accuracy": 100,
    "faithfulness": 5,
    "relevance": 5,
    "coherence": 5,
    "safety": "pass",
    "reasoning": "ok",
}


@pytest.fixture
def memory_examples(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("BQAS_MEMORY_EXAMPLES", "true")
    monkeypatch.setenv("BQAS_MEMORY_MIN_SIMILARITY", "0.5")
    get_review_settings.cache_clear()
    yield
    get_review_settings.cache_clear()


def test_llm_judge_sees_only_the_callers_reviewed_cases(tmp_path: Path, memory_examples: None) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'svc.sqlite'}")
    enqueue_escalations(store, "school-17", [voice_record("past-1", reasons=["borderline"], inputs=INPUTS)])
    item = list_items(store, "school-17", ItemFilter())[0][0]
    done = submit_review(
        store,
        "school-17",
        item.id,
        verdict="failed",
        raw_values={"faithfulness": "2"},
        comment="Uhrzeit erfunden",
        reviewer="t",
    )
    assert done is not None
    with ScriptedLLM(default=Reply(content=json.dumps(ANSWER))) as llm:
        settings = Settings(home=tmp_path / "home", llm_cache=False, llm_base_url=llm.base_url, judge_model="m")
        app = create_app(settings=settings, service=ServiceSettings(rate_limit=0), store=store)
        own, other = create_api_key(store, "school-17"), create_api_key(store, "school-23")
        with ServiceServer(app) as server:
            body = {"sample": INPUTS, "judges": ["voice"], "backend": "llm"}
            for key in (own, other):
                answer = httpx.post(
                    f"{server.base_url}/api/score", json=body, headers={"Authorization": f"Bearer {key}"}
                )
                assert answer.status_code == 200, answer.text
        prompts = [r["messages"][1]["content"] for r in llm.requests]
    assert len(prompts) == 2
    assert "<<<DATA reviewed_example_1 " in prompts[0] and "Uhrzeit erfunden" in prompts[0]
    assert "reviewed_example" not in prompts[1]
