"""Token log-probabilities and k-sample agreement through the client, against the scripted server."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bqas.llm.client import LLMClient, LLMConfig
from bqas.llm.logprobs import parse_logprobs, tokens_in_span
from bqas.testing.scripted_llm import Reply, ScriptedLLM, Token

MESSAGES = [{"role": "user", "content": "Bewerte"}]
SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]}
VERDICT = '{"verdict": "pass", "score": 85}'


def _client(server: ScriptedLLM, **kw: object) -> LLMClient:
    options: dict[str, object] = {"backoff_base": 0.05, "timeout": 5.0, **kw}
    return LLMClient(LLMConfig(base_url=server.base_url, model="judge-1", **options))  # type: ignore[arg-type]


async def test_verdict_tokens_come_back_with_top_alternatives_and_offsets(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.push(Reply(content=VERDICT, logprobs={"pass": [("pass", -0.3), ("fail", -1.4), ("p", -5.0)]}))
    async with _client(scripted_llm) as client:
        out = await client.complete(MESSAGES, schema=SCHEMA, top_logprobs=2)
    sent = scripted_llm.requests[0]
    assert sent["logprobs"] is True and sent["top_logprobs"] == 2
    assert out.logprobs is not None and "".join(t.token for t in out.logprobs) == VERDICT
    start = VERDICT.index("pass")
    [token] = out.tokens(start, start + len("pass"))
    assert (token.token, token.logprob) == ("pass", -0.3)
    assert token.top == (("pass", -0.3), ("fail", -1.4))  # k = 2 alternatives
    assert VERDICT[token.offset : token.end] == "pass"  # type: ignore[misc]
    score = out.tokens(VERDICT.index("85"), VERDICT.index("85") + 2)
    assert [t.token for t in score] == ["85"] and math.isclose(score[0].logprob, -0.01)


async def test_no_logprobs_unless_asked(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.push(Reply(content=VERDICT))
    async with _client(scripted_llm) as client:
        out = await client.complete(MESSAGES, schema=SCHEMA)
    assert "logprobs" not in scripted_llm.requests[0] and out.logprobs is None


async def test_server_refusing_logprobs_is_asked_without_and_remembered() -> None:
    with ScriptedLLM(default=Reply(content=VERDICT), reject_logprobs=True) as server:
        async with _client(server) as client:
            first = await client.complete(MESSAGES, schema=SCHEMA, top_logprobs=5)
        # A second client for the same server (the service builds one per backend) does not ask again.
        async with _client(server) as other:
            second = await other.complete(MESSAGES, schema=SCHEMA, top_logprobs=5)
    assert first.text == VERDICT and first.logprobs is None and first.calls == 2
    assert second.logprobs is None and second.calls == 1
    assert [("logprobs" in r) for r in server.requests] == [True, False, False]


async def test_logprob_calls_skip_the_cache_lookup(scripted_llm: ScriptedLLM, tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    scripted_llm.default = Reply(content=VERDICT)
    async with _client(scripted_llm, cache_path=cache) as client:
        await client.complete(MESSAGES, schema=SCHEMA)
        again = await client.complete(MESSAGES, schema=SCHEMA, top_logprobs=1)
    assert not again.cache_hit and again.logprobs is not None and len(scripted_llm.requests) == 2


def test_offsets_from_token_bytes_across_a_split_character() -> None:
    text = "grün"
    raw = {
        "content": [
            {"token": "gr", "logprob": -0.1, "bytes": list(b"gr")},
            {"token": "\ufffd", "logprob": -0.2, "bytes": [0xC3]},
            {"token": "\ufffdn", "logprob": -0.3, "bytes": [0xBC, ord("n")]},
        ]
    }
    tokens = parse_logprobs(raw, text)
    assert tokens is not None
    assert [(t.offset, t.end) for t in tokens] == [(0, 2), (2, 2), (2, 4)]
    assert [t.logprob for t in tokens_in_span(tokens, 2, 3)] == [-0.3]


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "logprobs",
        {"content": []},
        {"content": [{"token": "a", "logprob": float("nan")}]},
        {"content": [{"token": "a", "logprob": 0.5}]},
        {"content": [{"token": "a", "logprob": True}]},
        {"content": [{"token": 7, "logprob": -1.0}]},
        {"content": ["a"]},
    ],
)
def test_malformed_logprobs_give_none_never_numbers(raw: object) -> None:
    assert parse_logprobs(raw, "a") is None


def test_hostile_alternatives_are_dropped_and_mismatched_text_has_no_offsets() -> None:
    raw = {
        "content": [
            {
                "token": "ok",
                "logprob": -0.5,
                "top_logprobs": [{"token": "ok", "logprob": -0.5}, {"token": "x", "logprob": "-1"}, "junk", {}],
            }
        ]
    }
    tokens = parse_logprobs(raw, "not the reply")
    assert tokens is not None and tokens[0].top == (("ok", -0.5),) and tokens[0].offset is None


async def test_sample_k_uses_n_where_the_server_honours_it(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.push(Reply(content='{"verdict": "pass"}'), Reply(content='{"verdict": "fail"}'))
    scripted_llm.default = Reply(content='{"verdict": "pass"}')
    async with _client(scripted_llm) as client:
        replies = await client.sample(MESSAGES, 3, temperature=0.8, schema=SCHEMA, top_logprobs=1)
    assert [r.text for r in replies] == ['{"verdict": "pass"}', '{"verdict": "fail"}', '{"verdict": "pass"}']
    assert len(scripted_llm.requests) == 1 and scripted_llm.requests[0]["n"] == 3
    assert scripted_llm.requests[0]["temperature"] == 0.8
    assert sum(r.calls for r in replies) == 1 and all(r.logprobs for r in replies)


async def test_sample_k_falls_back_to_k_calls_where_n_is_ignored() -> None:
    with ScriptedLLM(default=Reply(content='{"verdict": "pass"}'), honour_n=False) as server:
        async with _client(server) as client:
            first = await client.sample(MESSAGES, 3, schema=SCHEMA)
            second = await client.sample(MESSAGES, 2, schema=SCHEMA)
    assert len(first) == 3 and len(second) == 2
    assert sum(r.calls for r in first) == 3 and sum(r.calls for r in second) == 2
    # Learned once: only the very first request carried n.
    assert ["n" in r for r in server.requests] == [True, False, False, False, False]


async def test_sample_k_falls_back_where_n_is_refused(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.push(Reply(status=400, body='{"error": {"message": "n must be 1", "param": "n"}}'))
    scripted_llm.default = Reply(content='{"verdict": "pass"}')
    async with _client(scripted_llm) as client:
        replies = await client.sample(MESSAGES, 2, schema=SCHEMA)
    assert len(replies) == 2 and sum(r.calls for r in replies) == 3


async def test_sample_rejects_a_zero_temperature(scripted_llm: ScriptedLLM) -> None:
    async with _client(scripted_llm) as client:
        with pytest.raises(ValueError, match="temperature"):
            await client.sample(MESSAGES, 2, temperature=0.0)


async def test_reply_scripted_token_by_token(scripted_llm: ScriptedLLM) -> None:
    tokens = [Token('{"safe": "'), Token("fail", -0.7, [("fail", -0.7), ("pass", -0.9)]), Token('"}')]
    scripted_llm.push(Reply(tokens=tokens))
    async with _client(scripted_llm) as client:
        out = await client.complete(MESSAGES, top_logprobs=3)
    assert out.text == '{"safe": "fail"}' and out.logprobs is not None
    [verdict] = out.tokens(10, 14)
    assert verdict.top == (("fail", -0.7), ("pass", -0.9)) and (verdict.offset, verdict.end) == (10, 14)


def _entries(*tokens: str) -> dict[str, object]:
    return {"content": [{"token": t, "logprob": -0.1, "top_logprobs": [{"token": t, "logprob": -0.1}]} for t in tokens]}


def test_tokens_that_wrap_the_reply_in_a_code_fence_are_aligned_to_the_reply() -> None:
    # llama.cpp's JSON grammar allows a ```json fence; the content is the bare object, the log-probabilities
    # list every generated token (fence and end-of-text included), as its server sent them.
    text = '{"safety": "pass"}'
    raw = _entries("```", "json", "\n", '{"', "safety", '":', ' "', "pass", '"}', "\n", "```", "")
    tokens = parse_logprobs(raw, text)
    assert tokens is not None
    assert [(t.offset, t.end) for t in tokens[:4]] == [(None, None), (None, None), (None, None), (0, 2)]
    assert all(t.offset is None for t in tokens[-3:])  # the closing fence and the end-of-text token
    [value] = tokens_in_span(tokens, text.index("pass"), text.index("pass") + 4)
    assert value.token == "pass" and text[value.offset : value.end] == "pass"  # type: ignore[misc]


def test_a_reply_the_tokens_do_not_spell_once_gets_no_offsets() -> None:
    assert all(t.offset is None for t in parse_logprobs(_entries("a", "b"), "xyz") or [])
    # Spelled twice: which copy is the reply cannot be told.
    assert all(t.offset is None for t in parse_logprobs(_entries("{}", " ", "{}"), "{}") or [])


def test_unaligned_log_probabilities_give_no_p_reject_rather_than_a_certain_one() -> None:
    from bqas.judging.llm_confidence import from_logprobs
    from bqas.judgment.spec import default_registry

    spec = default_registry().get("rag_hallucination")
    data = {"grounding_score": 20, "invention_detection": "fail", "source_attribution": 1}
    text = '{"grounding_score": 20, "invention_detection": "fail", "source_attribution": 1}'
    tokens = parse_logprobs(_entries("nothing", " like", " the reply"), text)
    assert tokens is not None and all(t.offset is None for t in tokens)
    conf = from_logprobs(spec, text, data, tokens, "m")
    assert conf.p_reject is None and "do not spell the reply" in (conf.reason or "")
