"""LLM replies within limits: a 50,000-deep reply is ``unscored`` with a reason (bqas score, bqas run and
--resume, /api/score); lone surrogates are replaced with U+FFFD and said so; a runaway reply is not read
past BQAS_LLM_MAX_REPLY_BYTES and not cached."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.judging.parse import parse_reply
from bqas.judgment.spec import default_registry
from bqas.testing.scripted_llm import Reply, ScriptedLLM

GOOD = {"intent_accuracy": 100, "faithfulness": 5, "relevance": 5, "coherence": 5, "safety": "pass", "reasoning": "ok"}
DEEP = '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}"
SAMPLE = {
    "user_input": "Erinnere mich morgen an die Konferenz",
    "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen um 8 Uhr an die Konferenz.",
    "expected_intent": "reminder",
}


@pytest.fixture(autouse=True)
def _room_for_deep_replies(monkeypatch: pytest.MonkeyPatch) -> None:
    # The scripted server sends per-token log-probabilities: a 100 kB reply is a body of several MB.
    monkeypatch.setenv("BQAS_LLM_MAX_REPLY_BYTES", str(64 * 1024 * 1024))
    from bqas.settings import get_settings

    get_settings.cache_clear()


def _body(content: str) -> str:
    # ensure_ascii: a lone surrogate travels as the escape "\ud800", as a real server would send it.
    return json.dumps({"choices": [{"message": {"content": content}, "finish_reason": "stop"}], "usage": {}})


def test_parse_reply_refuses_deep_nesting_and_repairs_surrogates() -> None:
    schema = default_registry().get("voice").schema
    assert parse_reply(DEEP, schema).errors == ["reply nested deeper than 32 levels"]
    assert not parse_reply("```json\n" + DEEP + "\n```", schema).ok
    fixed = parse_reply(json.dumps({**GOOD, "reasoning": "a\ud800b"}), schema)
    assert fixed.ok and fixed.data is not None and fixed.data["reasoning"] == "a\ufffdb"
    assert any("U+FFFD" in w for w in fixed.warnings)


def _score(server: ScriptedLLM, *extra: str) -> Any:
    args = ["score", "-", "-j", "voice", "--backend", "llm", "--base-url", server.base_url, "--model", "m", *extra]
    return CliRunner().invoke(app, args, input=json.dumps(SAMPLE))


def test_bqas_score_deep_reply_is_unscored_with_a_reason(bqas_home: Path) -> None:
    with ScriptedLLM(default=Reply(content=DEEP)) as server:
        result = _score(server, "--max-unscored", "1")
    assert result.exit_code == 0, result.output
    record = json.loads(result.output.strip().splitlines()[-1])
    assert record["status"] == "unscored"
    assert "reply nested deeper than 32 levels" in record["unscored_reason"]


@pytest.mark.parametrize("where", ["content", "body"])
def test_surrogate_in_a_reply_becomes_replacement_character(bqas_home: Path, where: str) -> None:
    bad = json.dumps({**GOOD, "reasoning": "Gut \ud800 begründet"})  # the escape inside the content
    reply = (
        Reply(content=bad)
        if where == "content"
        else Reply(body=_body(json.dumps({**GOOD, "reasoning": "x\ud800"}, ensure_ascii=False)))
    )
    with ScriptedLLM(default=reply) as server:
        result = _score(server, "--no-cache")
    assert result.exit_code == 0, result.output
    record = json.loads(result.output.strip().splitlines()[-1])
    assert record["status"] == "scored"
    assert "\ufffd" in record["reasoning"]
    if where == "content":
        assert any("U+FFFD" in w for w in record["warnings"])


def test_runaway_reply_is_not_read_past_the_cap_nor_cached(bqas_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BQAS_LLM_MAX_REPLY_BYTES", "4096")
    from bqas.settings import get_settings

    get_settings.cache_clear()
    huge = json.dumps({**GOOD, "reasoning": "x" * 100_000})
    with ScriptedLLM(default=Reply(content=huge)) as server:
        first = _score(server, "--max-unscored", "1")
        second = _score(server, "--max-unscored", "1")
        asked = len(server.requests)
    for result in (first, second):
        record = json.loads(result.output.strip().splitlines()[-1])
        assert record["status"] == "unscored", record
        assert "exceeds 4096 bytes (BQAS_LLM_MAX_REPLY_BYTES)" in record["unscored_reason"]
        assert not record["unscored_reason"].startswith("LLM unavailable")
    assert asked == 2  # the second call was not answered from the cache


def _scenario(tmp_path: Path) -> Path:
    rows = [{**SAMPLE, "id": f"s{i}"} for i in range(3)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    path = tmp_path / "scenario.yaml"
    path.write_text(
        "name: deep-reply\njudges: [voice]\nbackend: llm\ndataset: data.jsonl\nthresholds:\n  max_unscored: 3\n",
        encoding="utf-8",
    )
    return path


def test_bqas_run_and_resume_finish_with_deep_replies(tmp_path: Path, bqas_home: Path) -> None:
    path = _scenario(tmp_path)
    runner = CliRunner()
    with ScriptedLLM(default=Reply(content=DEEP)) as server:
        llm = ["--base-url", server.base_url, "--model", "m", "--no-progress"]
        first = runner.invoke(app, ["run", str(path), *llm, "--out", str(tmp_path / "o")])
        assert first.exit_code == 0, first.output
        runs = json.loads(runner.invoke(app, ["runs", "--json"]).output)
        assert runs[0]["status"] == "done"
        again = runner.invoke(app, ["run", "--resume", runs[0]["id"], *llm, "--out", str(tmp_path / "o")])
        assert again.exit_code == 0, again.output
    records = [json.loads(x) for x in (tmp_path / "o" / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 3
    assert all(r["status"] == "unscored" and "nested deeper" in r["unscored_reason"] for r in records)


def test_api_score_deep_reply_is_unscored_not_500(tmp_path: Path) -> None:
    from test_service_api import _start

    with ScriptedLLM(default=Reply(content=DEEP)) as server:
        import os

        os.environ["BQAS_LLM_BASE_URL"], os.environ["BQAS_JUDGE_MODEL"] = server.base_url, "m"
        try:
            for svc in _start(tmp_path):
                body = {
                    "judges": ["voice"],
                    "question": SAMPLE["user_input"],
                    "answer": SAMPLE["response"],
                    "sample": {"detected_intent": "reminder", "expected_intent": "reminder"},
                    "backend": "llm",
                }
                r = httpx.post(
                    f"{svc.url}/api/score", json=body, headers={"Authorization": f"Bearer {svc.key_a}"}, timeout=120
                )
                assert r.status_code == 200, r.text
                assert r.json()[0]["status"] == "unscored" and "nested deeper" in r.json()[0]["unscored_reason"]
        finally:
            del os.environ["BQAS_LLM_BASE_URL"], os.environ["BQAS_JUDGE_MODEL"]
