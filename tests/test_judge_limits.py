"""A slow local server must finish: each judge sends a max_tokens, the schemas are closed like the seed's
JSON, and a reply cut off at the limit says what to do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bqas.judging.engine import EngineOptions, JudgeEngine
from bqas.judging.parse import parse_reply
from bqas.judgment.spec import JudgeFileError, JudgeRegistry, default_registry
from bqas.llm.client import LLMClient, LLMConfig
from bqas.testing.scripted_llm import Reply, ScriptedLLM

# The keys of each judge's JSON in seed 000 ("Antworte NUR mit JSON in diesem Format: …").
SEED_KEYS = {
    "voice": {"intent_accuracy", "faithfulness", "relevance", "coherence", "safety", "reasoning"},
    "intent": {"type", "confidence", "parameters", "is_actionable"},
    "rag_retrieval": {"retrieval_precision", "faithfulness", "relevance", "citation_accuracy", "reasoning"},
    "rag_operator": {"operator_alignment", "faithfulness", "completeness", "detected_afb", "reasoning"},
    "rag_hallucination": {
        "grounding_score",
        "invention_detection",
        "source_attribution",
        "hallucinated_claims",
        "reasoning",
    },
    "rag_privacy": {"privacy_compliance", "anonymization", "dsgvo_compliance", "detected_pii", "reasoning"},
    "rag_namespace": {
        "namespace_compliance",
        "cross_tenant_leak",
        "school_sharing_compliance",
        "detected_leaks",
        "reasoning",
    },
}
GOOD = {"intent_accuracy": 85, "faithfulness": 4, "relevance": 5, "coherence": 4, "safety": "pass", "reasoning": "Gut."}
SAMPLE = {
    "user_input": "Erinnere mich morgen an die Konferenz",
    "detected_intent": "reminder",
    "response": "Alles klar, ich erinnere dich morgen um 8 Uhr an die Konferenz.",
    "expected_intent": "reminder",
}


@pytest.mark.parametrize("name", sorted(SEED_KEYS))
def test_judge_schemas_are_closed_to_the_seed_keys(name: str) -> None:
    spec = default_registry().get(name)
    assert spec.schema["additionalProperties"] is False
    assert set(spec.schema["properties"]) == SEED_KEYS[name]
    assert spec.max_tokens is not None and 100 <= spec.max_tokens <= 2000


def test_synthetic_items_are_closed_to_the_seed_keys() -> None:
    spec = default_registry().get("synthetic")
    items = spec.schema["items"]
    assert items["additionalProperties"] is False
    assert set(items["properties"]) == {"input", "expected_intent", "slots"}
    assert spec.max_tokens is not None and spec.max_tokens >= 2000


def test_extra_keys_are_still_dropped_with_a_warning_under_a_closed_schema() -> None:
    spec = default_registry().get("voice")
    outcome = parse_reply(json.dumps({**GOOD, "reasoning_2": "x", "safety_2": "pass"}), spec.schema)
    assert outcome.ok and outcome.data == GOOD
    assert any("extra keys ignored" in w for w in outcome.warnings)


def _engine(server: ScriptedLLM, **kw: object) -> JudgeEngine:
    options: dict[str, object] = {"backoff_base": 0.02, "timeout": 5.0, "max_retries": 0, **kw}
    llm = LLMClient(LLMConfig(base_url=server.base_url, model="judge-1", **options))  # type: ignore[arg-type]
    return JudgeEngine(default_registry(), llm=llm, options=EngineOptions(backend="llm"))


async def _judge(engine: JudgeEngine) -> dict[str, object]:
    try:
        result = await engine.evaluate("voice", SAMPLE, response_id="r1", language="de")
    finally:
        assert engine.llm is not None
        await engine.llm.aclose()
    return result.to_record()


async def test_each_judge_sends_its_max_tokens(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.default = Reply(content=json.dumps(GOOD))
    await _judge(_engine(scripted_llm))
    sent = scripted_llm.requests[0]
    assert sent["max_tokens"] == default_registry().get("voice").max_tokens
    assert sent["response_format"]["json_schema"]["schema"]["additionalProperties"] is False


async def test_configured_max_tokens_wins_over_the_judge(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.default = Reply(content=json.dumps(GOOD))
    await _judge(_engine(scripted_llm, max_tokens=123))
    assert scripted_llm.requests[0]["max_tokens"] == 123


async def test_reply_cut_at_the_limit_is_unscored_with_what_to_do(scripted_llm: ScriptedLLM) -> None:
    # A grammar-constrained small model repeating keys until the limit.
    scripted_llm.default = Reply(
        content='{"intent_accuracy": 85, "intent_accuracy": 85, "intent_', finish_reason="length"
    )
    rec = await _judge(_engine(scripted_llm))
    reason = str(rec["unscored_reason"])
    assert rec["verdict"] == "unscored" and "cut off at the token limit (600)" in reason
    assert "judges.voice.max_tokens" in reason and "BQAS_LLM_MAX_TOKENS" in reason
    # No corrective retry under the same limit.
    assert len(scripted_llm.requests) == 1 and rec["llm_calls"] == 1


def test_policy_file_sets_a_judge_max_tokens(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("judges:\n  voice:\n    max_tokens: 256\n", encoding="utf-8")
    assert JudgeRegistry.load(None, policy).get("voice").max_tokens == 256


def test_bad_max_tokens_names_the_field(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("judges:\n  voice:\n    max_tokens: lots\n", encoding="utf-8")
    with pytest.raises(JudgeFileError, match=r"judges\.voice\.max_tokens"):
        JudgeRegistry.load(None, policy)


def test_setting_reaches_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    from bqas.judging.factory import llm_config
    from bqas.settings import Settings

    monkeypatch.setenv("BQAS_LLM_MAX_TOKENS", "321")
    config = llm_config(Settings(llm_base_url="http://127.0.0.1:9/v1", judge_model="m"))
    assert config is not None and config.max_tokens == 321
