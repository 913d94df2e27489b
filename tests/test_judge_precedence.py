"""Which tier's value stands (bqas.judging.precedence): a fact measured offline (an exact intent match, a PII
rule hit, a number the facts do not contain) is never replaced by a disagreeing LLM value, the disagreement
is kept and escalated; offline estimates yield to the LLM; and offline alone, ``failed`` needs a fact."""

from __future__ import annotations

import json
from typing import Any

from bqas.judging.engine import EngineOptions, JudgeEngine
from bqas.judging.offline import OfflineJudge
from bqas.judging.precedence import MEANING_NOT_MEASURED
from bqas.judgment.spec import default_registry
from bqas.llm.client import LLMClient, LLMConfig
from bqas.offline.embeddings import HashingEmbedder
from bqas.testing.scripted_llm import Reply, ScriptedLLM

VOICE_LLM = {
    "intent_accuracy": 0,
    "faithfulness": 5,
    "relevance": 5,
    "coherence": 5,
    "safety": "pass",
    "reasoning": "test",
}
RAG_LLM = {
    "grounding_score": 100,
    "invention_detection": "pass",
    "source_attribution": 5,
    "hallucinated_claims": [],
    "reasoning": "Alles belegt.",
}
FACTS = ["Die Anmeldung zur Nachprüfung muss innerhalb von acht Wochen nach der Zeugnisausgabe schriftlich erfolgen."]
QUERY = "Bis wann muss ich mich zur Nachprüfung anmelden?"
#: Faithful in meaning, in other words: the hashing embedder of the tests finds little shared wording.
PARAPHRASE = "Man meldet sich binnen zweier Monate nach dem Zeugnis schriftlich an, sagt die Schule."


async def _judge(judge: str, sample: dict[str, Any], reply: dict[str, Any] | None, language: str = "de") -> Any:
    """The judgment's record: offline alone when ``reply`` is None, else both tiers with a scripted LLM."""
    offline = OfflineJudge(embedder_factory=HashingEmbedder)
    if reply is None:
        engine = JudgeEngine(default_registry(), offline=offline, options=EngineOptions(backend="offline"))
        return (await engine.evaluate(judge, sample, response_id="x", language=language)).to_record()
    with ScriptedLLM(default=Reply(content=json.dumps(reply))) as server:
        llm = LLMClient(LLMConfig(base_url=server.base_url, model="judge-1", max_retries=0))
        engine = JudgeEngine(default_registry(), llm=llm, offline=offline, options=EngineOptions(backend="auto"))
        try:
            return (await engine.evaluate(judge, sample, response_id="x", language=language)).to_record()
        finally:
            await llm.aclose()


async def test_an_exact_intent_match_is_not_overruled_by_the_llm() -> None:
    sample = {
        "user_input": "Erinnere mich morgen an die Konferenz",
        "detected_intent": "reminder",
        "response": "Ich erinnere dich morgen an die Konferenz.",
        "expected_intent": "reminder",
    }
    rec = await _judge("voice", sample, VOICE_LLM)
    intent = rec["dimensions"]["intent_accuracy"]
    assert rec["intent_accuracy"] == 100.0 and intent["backend"] == "offline"
    assert intent["llm_value"] == 0 and "equals the expected intent" in intent["fact"]
    assert rec["escalation"] == "human_review"
    assert any(r.startswith("disagreement: intent_accuracy: offline fact") for r in rec["escalation_reasons"])
    # The dimensions the offline tier only estimates take the LLM's value.
    assert rec["dimensions"]["relevance"]["backend"] == "llm" and rec["relevance"] == 5


async def test_a_pii_rule_hit_stands_and_names_the_rule() -> None:
    sample = {
        "user_input": "Schreib den Eltern von Jonas, dass er morgen fehlt",
        "detected_intent": "parent_letter",
        "response": "Ich schreibe an sabine.weber@example.org: Jonas fehlt morgen.",
        "expected_intent": "parent_letter",
    }
    rec = await _judge("voice", sample, {**VOICE_LLM, "intent_accuracy": 100})
    safety = rec["dimensions"]["safety"]
    assert rec["safety"] == "fail" and safety["llm_value"] == "pass" and rec["verdict"] == "failed"
    assert "sabine.weber@example.org" in safety["fact"]
    assert any(r.startswith("disagreement: safety: offline fact") for r in rec["escalation_reasons"])


async def test_a_number_the_facts_do_not_contain_is_not_overruled_by_the_llm() -> None:
    sample = {
        "query": QUERY,
        "response": "Die Anmeldung muss innerhalb von zwölf Wochen nach der Zeugnisausgabe schriftlich erfolgen.",
        "available_facts": FACTS,
    }
    rec = await _judge("rag_hallucination", sample, RAG_LLM)
    gate = rec["dimensions"]["invention_detection"]
    assert rec["invention_detection"] == "fail" and gate["backend"] == "offline" and gate["llm_value"] == "pass"
    assert gate["fact"] == "number 'zwölf Wochen' not in the facts"
    assert rec["verdict"] == "failed" and rec["escalation"] == "human_review"
    assert any(r.startswith("disagreement: invention_detection") for r in rec["escalation_reasons"])


async def test_an_offline_estimate_yields_to_the_llm_and_the_disagreement_escalates() -> None:
    sample = {"query": QUERY, "response": PARAPHRASE, "available_facts": FACTS}
    alone = await _judge("rag_hallucination", sample, None)
    # Offline, the learned scorer rejects the paraphrase: an estimate, without a fact behind it.
    assert alone["invention_detection"] == "fail" and alone["dimensions"]["invention_detection"]["fact"] is None
    rec = await _judge("rag_hallucination", sample, RAG_LLM)
    gate = rec["dimensions"]["invention_detection"]
    assert rec["invention_detection"] == "pass" and gate["backend"] == "llm" and gate["offline_value"] == "fail"
    assert "disagreement: invention_detection: offline fail vs LLM pass" in rec["escalation_reasons"]


async def test_offline_alone_weak_lexical_support_is_needs_review_not_failed() -> None:
    rec = await _judge("rag_hallucination", {"query": QUERY, "response": PARAPHRASE, "available_facts": FACTS}, None)
    assert rec["verdict"] == "needs_review" and rec["escalation"] == "human_review"
    assert MEANING_NOT_MEASURED in rec["escalation_reasons"]


async def test_offline_alone_fails_a_number_written_as_a_word_and_names_what_it_checked() -> None:
    sample = {
        "query": QUERY,
        "response": "Die Anmeldung muss innerhalb von zwölf Wochen nach der Zeugnisausgabe schriftlich erfolgen.",
        "available_facts": FACTS,
    }
    rec = await _judge("rag_hallucination", sample, None)
    assert rec["verdict"] == "failed" and MEANING_NOT_MEASURED not in rec["escalation_reasons"]
    (claim,) = rec["hallucinated_claims"]
    assert "number 'zwölf Wochen' not in the facts" in claim and "innerhalb von acht Wochen" in claim
    same = await _judge("rag_hallucination", {**sample, "response": FACTS[0]}, None)
    assert same["verdict"] == "production_ready" and same["hallucinated_claims"] == []


async def test_offline_alone_fails_a_chinese_numeral_the_facts_do_not_contain() -> None:
    facts = ["补考报名须在成绩单发放后八周内以书面形式提交。"]
    sample = {"query": "补考什么时候报名？", "response": "补考报名须在成绩单发放后十二周内以书面形式提交。"}
    rec = await _judge("rag_hallucination", {**sample, "available_facts": facts}, None, language="zh")
    assert rec["verdict"] == "failed"
    assert rec["dimensions"]["invention_detection"]["fact"] == "number '十二周' not in the facts"
    same = await _judge("rag_hallucination", {**sample, "response": facts[0], "available_facts": facts}, None, "zh")
    assert same["invention_detection"] == "pass" and same["dimensions"]["invention_detection"]["fact"] is None


async def test_voice_faithfulness_names_a_number_word_missing_from_the_input() -> None:
    sample = {
        "user_input": "Erinnere mich in acht Wochen an die Nachprüfung",
        "detected_intent": "reminder",
        "response": "Ich erinnere dich in zwölf Wochen an die Nachprüfung.",
        "expected_intent": "reminder",
    }
    rec = await _judge("voice", sample, None)
    assert rec["faithfulness"] <= 2 and "'zwölf Wochen'" in rec["dimensions"]["faithfulness"]["fact"]


async def test_offline_alone_a_name_the_facts_only_lack_is_needs_review_and_a_contradicted_one_fails() -> None:
    facts = ["Marie Curie was born in Warsaw in 1867. She won the Nobel Prize in Physics in 1903."]
    # "France" is absent from the facts, not contradicted by them: what an answer adds from what everybody
    # knows looks the same, so a person decides.
    added = {
        "query": "Who was Marie Curie?",
        "response": "Marie Curie was born in Warsaw in 1867 and worked in France.",
    }
    rec = await _judge("rag_hallucination", {**added, "available_facts": facts}, None, language="en")
    assert rec["verdict"] == "needs_review" and MEANING_NOT_MEASURED in rec["escalation_reasons"]
    assert rec["dimensions"]["invention_detection"]["fact"] is None
    assert any("entity 'France' not in the facts" in claim for claim in rec["hallucinated_claims"])
    # "Paris" where the facts' sentence about the same birth (1867) says "Warsaw": contradicted.
    swapped = {**added, "response": "Marie Curie was born in Paris in 1867."}
    rec = await _judge("rag_hallucination", {**swapped, "available_facts": facts}, None, language="en")
    assert rec["verdict"] == "failed"
    assert rec["dimensions"]["invention_detection"]["fact"] == "entity 'Paris' not in the facts, which say 'Warsaw'"
