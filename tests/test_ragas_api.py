"""score_sample end to end against the scripted LLM server: every metric, failures, languages, cache."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("ragas")

from bqas.llm.client import LLMClient, LLMConfig
from bqas.offline.embeddings import default_embedder
from bqas.ragas import api
from bqas.ragas import judge_prompts as jp
from bqas.ragas.factory import build_metric, build_metric_pipeline
from bqas.ragas.metrics import LLM_METRICS, METRICS
from bqas.testing.ragas_scripted import loopback_only, ragas_responder, response_model_name
from bqas.testing.scripted_llm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u4e00-\u9fff]")
RECORD_KEYS = {
    "metric", "value", "status", "unscored_reason", "judge_language", "prompt_language", "backend", "model",
    "llm_calls", "prompt_tokens", "completion_tokens", "latency_ms", "errors",
}  # fmt: skip

SAMPLE = {
    "user_input": "Where was Einstein born?",
    "response": "Einstein was born in Germany. He liked cats.",
    "retrieved_contexts": ["Albert Einstein was born in Ulm, Germany in 1879.", "Cats are animals."],
    "reference": "Einstein was born in Germany.",
}


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(jp.PROMPTS_DIR_ENV, raising=False)
    jp.clear_cache()
    with loopback_only() as refused:
        yield
    assert refused == []


@pytest.fixture
def server() -> Iterator[ScriptedLLM]:
    with ScriptedLLM(responder=ragas_responder) as s:
        yield s


def client_for(server: ScriptedLLM, cache: Path | None = None) -> LLMClient:
    return LLMClient(LLMConfig(base_url=server.base_url, model="judge", max_retries=0, cache_path=cache))


def by_metric(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["metric"]: r for r in records}


async def test_every_metric_scores_against_the_scripted_server(server: ScriptedLLM) -> None:
    async with client_for(server) as llm:
        records = await api.score_sample(SAMPLE, list(METRICS), llm=llm)
    assert [r["metric"] for r in records] == list(METRICS)
    got = by_metric(records)
    for record in records:
        assert set(record) == RECORD_KEYS
        assert record["status"] == "scored", record
        assert record["backend"] == "ragas" and record["judge_language"] == "en"
    # Values follow from the scripted answers: 1 of 2 statements is in the contexts, etc.
    assert got["faithfulness"]["value"] == 0.5
    assert got["context_recall"]["value"] == 1.0
    assert got["context_precision"]["value"] == pytest.approx(1.0)
    assert got["factual_correctness"]["value"] == 0.67
    assert got["noise_sensitivity"]["value"] == 0.0
    assert 0.0 < got["answer_relevancy"]["value"] < 1.0
    # LLM calls per metric: statements + NLI; 3 generated questions; one per context; 2 x (claims + NLI).
    calls = {m: got[m]["llm_calls"] for m in LLM_METRICS}
    assert calls == {
        "faithfulness": 2,
        "answer_relevancy": 3,
        "context_recall": 1,
        "context_precision": 2,
        "noise_sensitivity": 7,
        "factual_correctness": 4,
    }
    assert sum(calls.values()) == len(server.requests)
    assert all(got[m]["prompt_tokens"] > 0 and got[m]["model"] == "judge" for m in LLM_METRICS)
    assert got["semantic_similarity"]["llm_calls"] == 0 and got["semantic_similarity"]["prompt_language"] is None


async def test_semantic_similarity_uses_the_bqas_embedder() -> None:
    records = await api.score_sample(SAMPLE, ["semantic_similarity"], llm=None)
    vectors = default_embedder().embed([SAMPLE["reference"], SAMPLE["response"]])
    expected = float(np.dot(vectors[0], vectors[1]) / (np.linalg.norm(vectors[0]) * np.linalg.norm(vectors[1])))
    assert records[0]["status"] == "scored"
    assert records[0]["value"] == pytest.approx(expected, abs=1e-6)
    assert records[0]["model"] == default_embedder().name


async def test_aliases_are_accepted(server: ScriptedLLM) -> None:
    fields = {
        "question": SAMPLE["user_input"],
        "answer": SAMPLE["response"],
        "contexts": SAMPLE["retrieved_contexts"],
        "reference": SAMPLE["reference"],
    }
    async with client_for(server) as llm:
        records = await api.score_sample(fields, ["faithfulness", "context_recall"], llm=llm)
    assert [r["value"] for r in records] == [0.5, 1.0]


async def test_failing_metric_is_unscored_with_reason(server: ScriptedLLM) -> None:
    server.responder = lambda payload: Reply(content="this is not JSON at all")
    async with client_for(server) as llm:
        [record] = await api.score_sample(SAMPLE, ["context_recall"], llm=llm)
    assert record["status"] == "unscored" and record["value"] is None
    assert "no valid reply" in record["unscored_reason"]
    assert record["llm_calls"] == 2  # the call and one corrective retry
    assert any("asked again" in e for e in record["errors"])


async def test_http_error_is_unscored_and_other_metrics_still_score(server: ScriptedLLM) -> None:
    def responder(payload: dict[str, Any]) -> Reply | None:
        if response_model_name(payload) == "ContextRecallOutput":
            return Reply(status=400)
        return ragas_responder(payload)

    server.responder = responder
    async with client_for(server) as llm:
        records = by_metric(await api.score_sample(SAMPLE, ["context_recall", "faithfulness"], llm=llm))
    assert records["context_recall"]["status"] == "unscored"
    assert "HTTP 400" in records["context_recall"]["unscored_reason"]
    # Every request sent counts (json_schema, json_object, then plain prompting), though none answered.
    assert records["context_recall"]["llm_calls"] == 3
    assert records["faithfulness"]["status"] == "scored"
    # A bare 400 for one request does not demote the server's format for the others.
    assert all(r.get("response_format") for r in server.requests if response_model_name(r) != "ContextRecallOutput")


async def test_nan_from_ragas_is_unscored_never_nan(server: ScriptedLLM) -> None:
    server.responder = lambda payload: Reply(content='{"statements": []}')
    async with client_for(server) as llm:
        [record] = await api.score_sample(SAMPLE, ["faithfulness"], llm=llm)
    assert record["status"] == "unscored" and record["value"] is None
    assert "no number" in record["unscored_reason"]
    json.dumps(record, allow_nan=False)  # the record is valid JSON


async def test_missing_field_and_missing_llm_are_unscored_without_calls(server: ScriptedLLM) -> None:
    fields = {k: v for k, v in SAMPLE.items() if k != "reference"}
    async with client_for(server) as llm:
        records = by_metric(await api.score_sample(fields, ["context_recall", "faithfulness"], llm=llm))
    assert records["context_recall"]["unscored_reason"] == "missing sample field(s): reference"
    no_llm = by_metric(await api.score_sample(SAMPLE, ["faithfulness", "semantic_similarity"], llm=None))
    assert no_llm["faithfulness"]["status"] == "unscored" and "no LLM" in no_llm["faithfulness"]["unscored_reason"]
    assert no_llm["semantic_similarity"]["status"] == "scored"
    assert len(server.requests) == 2  # only faithfulness of the first call


async def test_usage_errors_raise() -> None:
    with pytest.raises(ValueError, match="unknown RAGAS metric"):
        await api.score_sample(SAMPLE, ["bleu"], llm=None)
    with pytest.raises(ValueError, match="judge_language"):
        await api.score_sample(SAMPLE, ["faithfulness"], llm=None, judge_language="fr")


async def test_without_the_extra_every_metric_is_unscored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "available", lambda: False)
    records = await api.score_sample(SAMPLE, ["semantic_similarity"], llm=None)
    assert records[0]["status"] == "unscored" and "bqas[ragas]" in records[0]["unscored_reason"]


async def test_second_run_is_served_from_the_cache(server: ScriptedLLM, tmp_path: Path) -> None:
    cache = tmp_path / "llm-cache.sqlite"
    async with client_for(server, cache) as llm:
        first = by_metric(await api.score_sample(SAMPLE, list(LLM_METRICS), llm=llm))
    # answer_relevancy asks the same question-generation prompt 3 times: 1 call, 2 cache hits.
    assert first["answer_relevancy"]["llm_calls"] == 1
    n = len(server.requests)
    async with client_for(server, cache) as llm:
        second = by_metric(await api.score_sample(SAMPLE, list(LLM_METRICS), llm=llm))
    assert len(server.requests) == n
    assert all(r["llm_calls"] == 0 for r in second.values())
    assert {m: r["value"] for m, r in second.items()} == {m: r["value"] for m, r in first.items()}


# -- what reaches the LLM ----------------------------------------------------------------------------


async def _sent(server: ScriptedLLM, localize: str | None, names: tuple[str, ...] = LLM_METRICS) -> list[Any]:
    """Score every LLM metric once and return the messages that reached the server."""
    del server.requests[:]
    async with client_for(server) as llm:
        if localize is None:
            from bqas.ragas.adapters import SeamEmbedding, SeamLLM

            emb = SeamEmbedding()
            metrics = {m: build_metric(m, SeamLLM(llm), emb) for m in names}
        else:
            metrics = build_metric_pipeline(names, client=llm, judge_language=localize).metrics
        for name, metric in metrics.items():
            from bqas.ragas.metrics import METRIC_FIELDS

            await metric.ascore(**{f: SAMPLE[f] for f in METRIC_FIELDS[name]})
    return [(r["messages"], r.get("response_format")) for r in server.requests]


async def test_english_prompts_are_byte_identical_to_unlocalized_ragas(server: ScriptedLLM) -> None:
    plain = await _sent(server, None)
    english = await _sent(server, "en")
    assert english == plain
    assert all(len(messages) == 1 and messages[0]["role"] == "user" for messages, _ in plain)
    # And it is ragas's own rendering, untouched.
    metric = build_metric("context_recall", _dummy_llm(), _dummy_emb())
    expected = metric.prompt.to_string(
        metric.prompt.input_model(
            question=SAMPLE["user_input"], context="\n".join(SAMPLE["retrieved_contexts"]), answer=SAMPLE["reference"]
        )
    )
    assert any(messages[0]["content"] == expected for messages, _ in plain)


def _dummy_llm() -> Any:
    from bqas.ragas.adapters import SeamLLM

    return SeamLLM(LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="unused")))


def _dummy_emb() -> Any:
    from bqas.ragas.adapters import SeamEmbedding

    return SeamEmbedding()


def _cjk_share(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    return len(CJK.findall(text)) / max(1, len(letters))


async def test_chinese_prompts_are_what_is_sent(server: ScriptedLLM) -> None:
    # noise_sensitivity is left out: its prompts cannot be localized and stay English by design.
    sent = await _sent(server, "zh", tuple(m for m in LLM_METRICS if m != "noise_sensitivity"))
    localized_models = set()
    for messages, fmt in sent:
        text = messages[0]["content"]
        model = (fmt or {}).get("json_schema", {}).get("name") or response_model_name({"messages": messages})
        instruction = text.split("\nPlease return the output in a JSON format", 1)[0]
        examples = text.split("--------EXAMPLES-----------", 1)[1].split("-----------------------------", 1)[0]
        assert _cjk_share(instruction) > 0.6, instruction
        # Example values only: JSON keys and the Example/Input/Output labels are ragas's fixed English.
        values = re.sub(r'"\w+":|Example \d+|Input:|Output:', "", examples)
        assert _cjk_share(values) > 0.6, model
        localized_models.add(model)
    assert localized_models == {
        "StatementGeneratorOutput",
        "NLIStatementOutput",
        "AnswerRelevanceOutput",
        "ContextRecallOutput",
        "ContextPrecisionOutput",
        "ClaimDecompositionOutput",
    }


async def test_zh_records_say_which_prompt_language_was_used(server: ScriptedLLM) -> None:
    async with client_for(server) as llm:
        records = by_metric(await api.score_sample(SAMPLE, list(METRICS), llm=llm, judge_language="zh"))
    assert all(r["status"] == "scored" and r["judge_language"] == "zh" for r in records.values())
    assert records["faithfulness"]["prompt_language"] == "zh"
    assert records["factual_correctness"]["prompt_language"] == "zh"
    assert records["noise_sensitivity"]["prompt_language"] == "en"
    assert records["semantic_similarity"]["prompt_language"] is None


async def test_zh_with_missing_cache_scores_in_english(
    server: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(jp.PROMPTS_DIR_ENV, str(tmp_path / "none"))
    jp.clear_cache()
    async with client_for(server) as llm:
        [record] = await api.score_sample(SAMPLE, ["faithfulness"], llm=llm, judge_language="zh")
    assert record["status"] == "scored" and record["prompt_language"] == "en"
    assert any("no judge-prompt cache" in e for e in record["errors"])


def test_cli_and_offline_paths_do_not_import_ragas() -> None:
    code = (
        "import sys; import bqas.cli.main, bqas.ragas, bqas.ragas.api, bqas.ragas.judge_prompts, bqas.judging.engine;"
        "sys.exit(1 if 'ragas' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO, timeout=60).returncode == 0


def test_analytics_are_off_once_ragas_is_loaded() -> None:
    from bqas.ragas import lib

    assert os.environ["RAGAS_DO_NOT_TRACK"] == "true"
    assert lib._analytics.do_not_track() is True
