"""The LLM seam against a real llama.cpp engine: what the engine really does, and what BQAS makes of it.

Each test here pins a behaviour of llama.cpp's server (SmolLM2-135M, the session's `local_llm`) that a
scripted server does not show. Replies are kept short (max_tokens) because every token costs CPU time on
a shared machine; the model judges badly, so the tests check what BQAS does with the replies (valid
scores or `unscored` with a reason, token accounting, negotiation, confidence), never the grades.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request
from typing import Any

import pytest

from bqas.judging.engine import EngineOptions, JudgeEngine
from bqas.judging.llm_confidence import from_logprobs
from bqas.judging.offline import OfflineJudge
from bqas.judging.parse import parse_reply
from bqas.judging.render import render_prompt
from bqas.judgment.spec import default_registry
from bqas.llm.client import LLMClient, LLMConfig, LLMError
from bqas.llm.local import LocalEngine
from bqas.llm.servers import traits_for
from bqas.offline.embeddings import HashingEmbedder

VOICE = {
    "user_input": "Remind me tomorrow about the conference",
    "detected_intent": "reminder",
    "response": "I will remind you tomorrow at 8 about the conference.",
    "expected_intent": "reminder",
}

# A real engine on a shared CPU: a judgment takes seconds to a minute of wall time under load.
pytestmark = pytest.mark.timeout(900)


def _client(engine: LocalEngine, **config: Any) -> LLMClient:
    # The time the engine needs (600 s, as BQAS gives an embedded engine): under a loaded machine a
    # 60 s limit ended calls that were still waiting for a slot, and the test saw prompt_tokens 0.
    return LLMClient(LLMConfig(base_url=engine.base_url, model=engine.name, **{"timeout": 600.0, **config}))


def _engine(llm: LLMClient, **options: Any) -> JudgeEngine:
    return JudgeEngine(
        default_registry(),
        llm=llm,
        offline=OfflineJudge(embedder_factory=HashingEmbedder),
        options=EngineOptions(backend="llm", **options),
    )


async def _judge(llm: LLMClient, sample: dict[str, Any], judge: str = "voice", **options: Any) -> dict[str, Any]:
    try:
        result = await _engine(llm, **options).evaluate(judge, sample, response_id="t", language="en")
    finally:
        await llm.aclose()
    return result.to_record()


def _slots(engine: LocalEngine) -> list[dict[str, Any]]:
    request = urllib.request.Request(
        engine.base_url.removesuffix("/v1") + "/slots", headers={"Authorization": f"Bearer {engine.api_key}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        slots: list[dict[str, Any]] = json.loads(response.read())
    return slots


async def test_token_logprobs_line_up_with_the_reply_although_the_engine_strips_a_code_fence(
    local_llm: LocalEngine,
) -> None:
    # llama.cpp's JSON grammar lets the model open with ```json; the reply's content is the bare object,
    # but the log-probabilities list the fence's tokens too. Aligned to nothing, every value counted as
    # certain and p_reject came out as exactly 0 or 1, labelled "logprobs".
    spec = default_registry().get("voice")
    prompt = render_prompt(spec, VOICE, "en")
    llm = _client(local_llm)
    try:
        out = await llm.complete(list(prompt.messages), schema=spec.schema, top_logprobs=3, max_tokens=160)
    finally:
        await llm.aclose()
    assert out.logprobs is not None and out.mode == "json_schema"
    spelled = "".join(t.token for t in out.logprobs)
    assert out.text in spelled  # what was generated holds the reply …
    aligned = [t for t in out.logprobs if t.offset is not None and t.end is not None]
    assert aligned, "no token lines up with the reply"
    for token in aligned:  # … and each aligned token sits where its characters are
        assert out.text[token.offset : token.end] in token.token
    if spelled != out.text:  # the fence (or other wrapping) is left out, not misplaced
        assert any(t.offset is None for t in out.logprobs)
    outcome = parse_reply(out.text, spec.schema)
    if outcome.ok:
        assert isinstance(outcome.data, dict)
        conf = from_logprobs(spec, out.text, outcome.data, out.logprobs, local_llm.name)
        assert conf.method == "logprobs" and conf.p_reject is not None and 0.0 <= conf.p_reject <= 1.0


async def test_a_prompt_over_the_context_is_unscored_after_one_call_and_says_so(local_llm: LocalEngine) -> None:
    # llama.cpp answers 400 "request (N tokens) exceeds the available context size". The client took a 400
    # to a request with a response format for a rejected format: it asked three times (json_schema,
    # json_object, prompt) and the result said "LLM unavailable" (a 503 in the service).
    long = " ".join(["Die Konferenz beginnt morgen um acht Uhr im Lehrerzimmer."] * 400)  # ~24,000 characters
    llm = _client(local_llm, max_retries=0)
    record = await _judge(llm, {**VOICE, "response": long}, max_field_chars=30_000)
    assert record["status"] == "unscored" and record["composite_score"] is None
    assert record["unscored_reason"].startswith("judge prompt too long: the prompt does not fit the model's context")
    assert "exceeds the available context size" in record["unscored_reason"]
    assert "n_ctx" in record["unscored_reason"] and "BQAS_MAX_FIELD_CHARS" in record["unscored_reason"]
    assert record["llm_calls"] == 1
    assert not traits_for(local_llm.base_url).rejected_modes  # no format was blamed


async def test_negotiation_steps_down_to_what_the_engine_accepts(local_llm: LocalEngine) -> None:
    # A schema llama.cpp cannot turn into a grammar (a $ref outside the document) is refused with 400 for
    # json_schema and for json_object ("Unable to generate parser … JSON schema error"); plain prompting works.
    schema = {
        "type": "object",
        "properties": {"score": {"$ref": "https://example.org/score.json"}},
        "required": ["score"],
    }
    messages = [{"role": "user", "content": 'Reply with {"score": 3}.'}]
    llm = _client(local_llm, max_retries=0)
    try:
        first = await llm.complete(messages, schema=schema, max_tokens=12, use_cache=False)
        second = await llm.complete(messages, schema=schema, max_tokens=12, use_cache=False)
    finally:
        await llm.aclose()
    assert (first.mode, first.calls) == ("prompt", 3)
    assert traits_for(local_llm.base_url).rejected_modes == {"json_schema", "json_object"}
    assert (second.mode, second.calls) == ("prompt", 1)  # remembered for the server


async def test_each_structured_output_mode_gives_a_valid_score_or_unscored_with_a_reason(
    local_llm: LocalEngine,
) -> None:
    # The engine accepts json_schema (the grammar) and llama.cpp's json_object + schema: under either the
    # 135M model writes the judge's JSON, and the judgment is scored. Without (prompt) it rarely does, and
    # the result then says which of its replies failed.
    for mode in ("json_schema", "json_object", "prompt"):
        llm = _client(local_llm, structured_output=mode, max_tokens=160, max_retries=0)
        record = await _judge(llm, VOICE)
        if mode != "prompt":
            assert record["status"] == "scored", (mode, record["unscored_reason"])
        if record["status"] == "scored":
            assert record["composite_score"] is not None and 1 <= record["faithfulness"] <= 5
            assert 0 <= record["intent_accuracy"] <= 100  # the grammar does not bound numbers; validation does
        else:
            assert record["unscored_reason"].startswith(
                ("judge reply failed validation twice: ", "the judge's reply was cut off at the token limit (160)")
            ), record["unscored_reason"]
            assert record["composite_score"] is None
        assert record["llm_calls"] >= 1 and record["prompt_tokens"] > 0
        attempts = json.loads(json.dumps(record)).get("exchange") or {}
        assert all(a.get("mode") in (None, mode) for a in attempts.get("attempts", []))


async def test_a_reply_cut_off_mid_json_is_unscored_without_a_second_call(local_llm: LocalEngine) -> None:
    llm = _client(local_llm, max_tokens=8, max_retries=0)
    record = await _judge(llm, VOICE)
    assert record["status"] == "unscored" and record["composite_score"] is None
    assert "cut off at the token limit (8)" in record["unscored_reason"]
    assert record["llm_calls"] == 1 and record["completion_tokens"] == 8
    assert all(not d["measured"] for d in record["dimensions"].values() if d["backend"] == "llm")


async def test_p_reject_from_samples_when_the_engine_refuses_n(local_llm: LocalEngine) -> None:
    # llama.cpp serves at most as many choices per request as it has slots: n=3 on two slots is a 400
    # ("Field 'n': Value must be between 1 <= value <= 2"). The client remembers that and asks k times.
    llm = _client(local_llm, max_tokens=160, max_retries=0)
    record = await _judge(llm, VOICE, llm_confidence="samples", confidence_samples=3)
    assert traits_for(local_llm.base_url).n is False
    # Under the grammar the judgment is scored (confidence is only asked of a scored one).
    assert record["status"] == "scored", record["unscored_reason"]
    conf = record["confidence"].get("llm")
    assert conf is not None and conf["model"] == local_llm.name
    if conf["p_reject"] is not None:
        assert conf["method"] in ("agreement:1", "agreement:2", "agreement:3") and 0 <= conf["p_reject"] <= 1
    else:
        assert "sampled replies was valid" in conf["reason"]
    # The judgment, the refused n=3 request and three samples: every request is counted.
    assert record["llm_calls"] == 5


def _metrics(engine: LocalEngine) -> dict[str, float]:
    request = urllib.request.Request(
        engine.base_url.removesuffix("/v1") + "/metrics", headers={"Authorization": f"Bearer {engine.api_key}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    return {line.split()[0]: float(line.split()[1]) for line in text.splitlines() if line and line[0] != "#"}


def test_a_timed_out_request_is_counted_and_its_slot_comes_free(local_llm: LocalEngine) -> None:
    # The client gives up and closes the connection. llama.cpp usually notices and stops generating (7 of
    # 400 tokens in a check by hand), but not always: in one full-suite run under heavy load it generated
    # all 400. What BQAS relies on: the call is counted as timed out, and the slot comes free again.
    llm = _client(local_llm, timeout=1.0, max_retries=0, max_tokens=400)
    messages = [{"role": "user", "content": "Write a long story about a cat who learns to fly."}]
    before = _metrics(local_llm)["llamacpp:tokens_predicted_total"]

    async def ask() -> None:
        try:
            await llm.complete(messages, use_cache=False)
        finally:
            await llm.aclose()

    with pytest.raises(LLMError, match="timed out") as raised:
        asyncio.run(ask())
    assert raised.value.timed_out and raised.value.calls == 1 and llm.usage.timeouts == 1
    for _ in range(3000):  # bounded: at most 3,000 looks (400 tokens at the slowest seen here: ~60 s)
        if not any(s.get("is_processing") for s in _slots(local_llm)):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the engine's slot did not come free after the client gave up")
    assert 0 <= _metrics(local_llm)["llamacpp:tokens_predicted_total"] - before <= 400


def test_two_runs_at_once_share_the_engine_slots(local_llm: LocalEngine) -> None:
    # Two runs (two threads, each with its own event loop and client, as two CLI runs in one service)
    # send four requests to an engine with two slots: the engine queues the rest, every judgment ends.
    samples = [
        {**VOICE, "response": "I will remind you tomorrow."},
        {**VOICE, "response": "Reminder set for tomorrow at 8."},
    ]
    records: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def run() -> None:
        async def both() -> list[dict[str, Any]]:
            llm = _client(local_llm, max_tokens=60, max_retries=0, concurrency=2)
            engine = _engine(llm)
            try:
                results = await asyncio.gather(
                    *(engine.evaluate("voice", s, response_id=f"s{i}", language="en") for i, s in enumerate(samples))
                )
            finally:
                await llm.aclose()
            return [r.to_record() for r in results]

        try:
            records.extend(asyncio.run(both()))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(records) == 4
    for record in records:
        # Each judgment got the engine's answer: scored, or cut at the 60 tokens asked for (never a timeout
        # or a refused request while the other run held the slots).
        assert record["llm_calls"] >= 1 and record["completion_tokens"] > 0
        assert record["status"] == "scored" or record["unscored_reason"].startswith(
            "the judge's reply was cut off at the token limit (60)"
        ), record["unscored_reason"]
        assert record["model"] == local_llm.name
